"""`chorus compress --explain`: what a compression removed, summarised and kept, and the fact ledger it wrote."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent.messages import messages_to_wire, user
from agent.session_files import read_sessions
from gateway.cli import main

DATA = Path(__file__).resolve().parents[2] / "data"
CONSTRAINT = "Never book basic economy for this customer."


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CHORUS_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./config.yaml


def _planted_session(tmp_path: Path) -> Path:
    """A real airline session with a constraint added to an early user turn, as a JSON array file."""
    messages = list(next(iter(read_sessions(DATA / "taubench_airline.jsonl"))).messages)
    index = next(i for i, m in enumerate(messages) if m.role == "user" and i > 4)
    messages.insert(index + 1, user(f"One more thing. {CONSTRAINT}"))
    path = tmp_path / "session.json"
    path.write_text(json.dumps(messages_to_wire(messages)))
    return path


def test_explain_lists_each_summarised_message_and_the_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The counts match the per-message lines, and the planted constraint appears as a ledger entry."""
    path = _planted_session(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text("compression: {user_words_max_tokens: 0}\n")
    assert main(["compress", str(path), "--context-length", "8000", "--explain", "--config", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    counts = re.search(r"summarised and removed: (\d+)", out[1])
    assert out[1].startswith("  kept verbatim: ") and counts is not None
    summarised = [line for line in out if re.match(r"  #\d+ +\w+ +summarised ", line)]
    assert len(summarised) == int(counts.group(1)) > 0
    ledger_header = next(line for line in out if line.startswith("  fact ledger: "))
    entries = [line.strip() for line in out if line.startswith("    - [turn ")]
    assert ledger_header.startswith(f"  fact ledger: {len(entries)} entries")
    assert any(entry.endswith(CONSTRAINT) and ", user] " in entry for entry in entries)


def test_explain_shows_user_words_and_what_the_ledger_left_to_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """By default the constraint's message is kept whole in user words, and the ledger says it left it there."""
    path = _planted_session(tmp_path)
    assert main(["compress", str(path), "--context-length", "8000", "--explain"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert next(line for line in out if line.startswith("  fact ledger: ")).endswith("1 shown in user words)")
    words = out.index(next(line for line in out if line.startswith("  user words: ")))
    assert any(line.endswith(f"One more thing. {CONSTRAINT}") for line in out[words + 1 :])


def test_explain_in_json_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --report json the explanation lines ride along in each row; without --explain they do not."""
    path = _planted_session(tmp_path)
    assert main(["compress", str(path), "--context-length", "8000", "--explain", "--report", "json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["explain"][0].startswith("  kept verbatim: ")
    assert any(line.strip().endswith(CONSTRAINT) for line in row["explain"])
    assert main(["compress", str(path), "--context-length", "8000", "--report", "json"]) == 0
    (plain,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert "explain" not in plain


def test_compressed_session_carries_the_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`chorus compress` uses the configured handoff sections: the written session holds the ledger line."""
    path = _planted_session(tmp_path)
    output = tmp_path / "out.json"
    assert main(["compress", str(path), "--context-length", "8000", "--output", str(output)]) == 0
    capsys.readouterr()
    handoff = next(m for m in json.loads(output.read_text()) if "## User words kept" in (m["content"] or ""))
    assert f"> One more thing. {CONSTRAINT}" in handoff["content"]
