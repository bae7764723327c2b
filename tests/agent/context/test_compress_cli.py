"""`chorus compress` end to end through `gateway.cli.main` on the sessions in tests/data."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent.context._handoff import END_MARKER, is_handoff, is_real_user
from agent.context._sanitize import sanitize_tool_pairs
from agent.messages import messages_to_wire
from agent.session_files import read_sessions
from gateway.cli import main
from tests.agent.context.compressor_helpers import DATA
from tests.fakes.openai_server import FakeOpenAI, Reply

REQUIRED = {"id", "messages_before", "messages_after", "tokens_before", "tokens_after", "summary_kind", "pruned_tool_results", "elapsed_ms"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CHORUS_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./config.yaml


def rows(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_jsonl_sessions_compress_with_fallback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every session gets a JSON row; the output file holds valid, smaller sessions carrying the END marker."""
    source = DATA / "taubench_airline.jsonl"
    output = tmp_path / "out.jsonl"
    code = main(["compress", str(source), "--context-length", "8000", "--summarizer", "fallback", "--output", str(output), "--report", "json"])
    report = rows(capsys.readouterr().out)
    assert code == 0
    originals = list(read_sessions(source))
    assert [row["id"] for row in report] == [record.id for record in originals]
    for row in report:
        assert REQUIRED <= set(row)
        assert row["summary_kind"] == "fallback" and row["tokens_after"] < row["tokens_before"]  # type: ignore[operator]
    written = list(read_sessions(output))
    assert [record.id for record in written] == [record.id for record in originals]
    for before, after in zip(originals, written):
        assert sanitize_tool_pairs(after.messages)[0] == list(after.messages)
        assert any(is_handoff(m) and END_MARKER in m.text for m in after.messages)
        assert [m for m in before.messages if is_real_user(m)][-1] in after.messages
        assert after.extra == before.extra and after.tools == before.tools


def test_array_file_keeps_its_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON array input is written back as a JSON array; the text report names what was done."""
    record = next(read_sessions(DATA / "minisweagent_django_15957.jsonl"))
    source = tmp_path / "session.json"
    source.write_text(json.dumps(messages_to_wire(record.messages)))
    output = tmp_path / "out.json"
    assert main(["compress", str(source), "--output", str(output)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("session: 100 -> ") and "fallback summary" in text
    assert isinstance(json.loads(output.read_text()), list)


def test_bad_input_exits_2_naming_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken line exits 2 with file:line, and nothing is written."""
    source = tmp_path / "bad.jsonl"
    source.write_text('{"id": "ok", "messages": []}\n{"id": "x", "messages": [{"role": "robot"}]}\n')
    output = tmp_path / "out.jsonl"
    assert main(["compress", str(source), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert f"{source}:2" in err and "role 'robot'" in err
    assert not output.exists()
    assert main(["compress", str(tmp_path / "missing.jsonl")]) == 2


def test_llm_without_a_model_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    """--summarizer llm with no model configured exits 2 and says which key to set."""
    assert main(["compress", str(DATA / "taubench_airline.jsonl"), "--summarizer", "llm"]) == 2
    assert "model.name" in capsys.readouterr().err


async def test_llm_summarizer_uses_the_configured_models(fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--summarizer llm builds clients from config: auxiliary.compression first, then the main model."""
    config = tmp_path / "config.yaml"
    config.write_text(
        f"model: {{name: main-model, base_url: '{fake_openai.base_url}', api_key: k}}\n"
        f"auxiliary: {{compression: {{model: aux-model, base_url: '{fake_openai.base_url}'}}}}\n"
    )
    fake_openai.push(Reply(status=503), *[Reply(content="## Goal\nrebook") for _ in range(3)])
    args = ["compress", str(DATA / "taubench_airline.jsonl"), "--config", str(config), "--summarizer", "llm",
            "--context-length", "8000", "--report", "json"]
    code = await asyncio.to_thread(main, args)
    report = rows(capsys.readouterr().out)
    assert code == 0
    assert [row["summary_kind"] for row in report] == ["llm", "llm", "llm"]
    assert [r["model"] for r in fake_openai.requests] == ["aux-model", "main-model", "aux-model", "aux-model"]
