"""`chorus sessions`: import/export round trip, list, show, search, and exit codes, through `gateway.cli.main`."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from agent.messages import user
from agent.store import SqliteSessionStore
from gateway.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = sorted(DATA.glob("*.jsonl"))


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    """The CLI points structlog at the (captured) stderr; later tests must not write to a closed stream."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def config(home: Path, tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(f"home: {home}\n", encoding="utf-8")
    return str(path)


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_import_then_export_round_trips_every_test_file(config: str, tmp_path: Path) -> None:
    """Each session comes back with the same id, messages, tools and pass-through fields."""
    for file in FILES:
        assert main(["sessions", "import", str(file), "--config", config]) == 0
    out = tmp_path / "export.jsonl"
    assert main(["sessions", "export", "--output", str(out), "--config", config]) == 0
    exported = {line["id"]: line for line in _lines(out)}
    originals = [line for file in FILES for line in _lines(file)]
    assert sorted(exported) == sorted(str(o["id"]) for o in originals)
    for original in originals:
        again = exported[str(original["id"])]
        assert again["messages"] == original["messages"]
        assert {k: again.get(k) for k in original} == original
        assert again["chat_id"] == original["id"]


def test_export_of_an_import_imports_to_an_identical_store(config: str, tmp_path: Path) -> None:
    """export → import into a fresh home → export gives the same file (archived messages included)."""
    assert main(["sessions", "import", str(DATA / "taubench_airline.jsonl"), "--config", config]) == 0
    first = tmp_path / "first.jsonl"
    assert main(["sessions", "export", "-o", str(first), "--config", config]) == 0
    other_home = tmp_path / "other"
    other_config = tmp_path / "other.yaml"
    other_config.write_text(f"home: {other_home}\n", encoding="utf-8")
    assert main(["sessions", "import", str(first), "--config", str(other_config)]) == 0
    second = tmp_path / "second.jsonl"
    assert main(["sessions", "export", "-o", str(second), "--config", str(other_config)]) == 0
    assert _lines(second) == _lines(first)


def test_archived_messages_survive_export_and_import(config: str, home: Path, tmp_path: Path) -> None:
    """A compressed session exports its archived messages and imports them back as archived."""
    with SqliteSessionStore(home / "state.db") as store:
        session = store.ensure_session("web:c", platform="web", chat_id="c")
        store.append(session.id, [user("the original transcript")])
        store.replace_active(session.id, [user("[summary]")])
    out = tmp_path / "out.jsonl"
    assert main(["sessions", "export", "-o", str(out), "--config", config]) == 0
    (line,) = _lines(out)
    assert (line["messages"], line["archived_messages"]) == (
        [{"role": "user", "content": "[summary]"}], [{"role": "user", "content": "the original transcript"}]
    )


def test_import_under_a_given_chat_then_search_and_list(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--chat puts every session in that chat; search finds its messages and list shows the sessions."""
    assert main(["sessions", "import", str(DATA / "taubench_airline.jsonl"), "--chat", "web:ops", "--config", config]) == 0
    capsys.readouterr()
    assert main(["sessions", "search", "--chat", "web:ops", "cancel reservation", "--config", config]) == 0
    found = capsys.readouterr().out
    assert "**cancel**" in found.lower() or "**reservation**" in found.lower()
    assert main(["sessions", "search", "--chat", "web:elsewhere", "cancel reservation", "--config", config]) == 0
    assert capsys.readouterr().out == ""
    assert main(["sessions", "list", "--chat", "web:ops", "--config", config]) == 0
    table = capsys.readouterr().out.splitlines()
    assert (table[0].split()[:4], len(table)) == (["ID", "KEY", "CHAT", "MESSAGES"], 4)


def test_show_marks_archived_messages(config: str, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """show prints every message in order; replaced ones carry an [archived gN] mark."""
    with SqliteSessionStore(home / "state.db") as store:
        session = store.ensure_session("web:c", platform="web", chat_id="c")
        store.append(session.id, [user("old words")])
        store.replace_active(session.id, [user("[summary]")])
    assert main(["sessions", "show", session.id, "--config", config]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("session "))
    assert header.startswith(f"session {session.id}  key web:c  chat c")
    assert [line for line in lines if line.startswith("#")] == ["#0 user [archived g1]: old words", "#1 user: [summary]"]


def test_importing_the_same_file_twice_skips_known_sessions(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A second import adds nothing and says how many sessions it skipped."""
    file = str(DATA / "taubench_airline.jsonl")
    assert main(["sessions", "import", file, "--config", config]) == 0
    capsys.readouterr()
    assert main(["sessions", "import", file, "--config", config]) == 0
    assert capsys.readouterr().out.strip().endswith("imported 0 sessions (0 messages) from " + file
                                                    + "; skipped 3 already in the store")


@pytest.mark.parametrize(
    ("argv", "code", "fragment"),
    [
        (["sessions", "import", "missing.jsonl"], 2, "no such file"),
        (["sessions", "show", "nope"], 2, "no session 'nope'"),
        (["sessions", "list"], 1, "no session store at"),
    ],
)
def test_errors_have_exit_codes_and_say_what_is_wrong(
    config: str, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, fragment: str
) -> None:
    """Bad input exits 2, a missing store exits 1, each with a message naming the problem."""
    if argv[1] == "show":
        main(["sessions", "import", str(DATA / "taubench_airline.jsonl"), "--config", config])
    assert main([*argv, "--config", config]) == code
    assert fragment in capsys.readouterr().err


def test_a_bad_line_imports_nothing(config: str, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file with an invalid second line exits 2 naming file and line, and stores no session at all."""
    bad = tmp_path / "bad.jsonl"
    good = (DATA / "taubench_airline.jsonl").read_text(encoding="utf-8").splitlines()[0]
    bad.write_text(good + "\n" + '{"id": "x", "messages": [{"role": "wizard"}]}\n', encoding="utf-8")
    assert main(["sessions", "import", str(bad), "--config", config]) == 2
    assert f"{bad}:2" in capsys.readouterr().err
    assert not (home / "state.db").exists()


def test_compact_keeps_search_results(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """compact merges the index; the same search finds the same messages afterwards."""
    assert main(["sessions", "import", str(DATA / "irc_ubuntu_meeting_2.jsonl"), "--chat", "web:irc", "--config", config]) == 0
    capsys.readouterr()
    assert main(["sessions", "search", "--chat", "web:irc", "release meeting", "--config", config]) == 0
    before = capsys.readouterr().out
    assert main(["sessions", "compact", "--config", config]) == 0
    assert capsys.readouterr().out.startswith("search index compacted in ")
    assert main(["sessions", "search", "--chat", "web:irc", "release meeting", "--config", config]) == 0
    assert (capsys.readouterr().out, before != "") == (before, True)


def test_a_repeated_id_in_one_file_is_imported_once(config: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two lines with the same id: the first is imported, the second skipped and reported."""
    line = (DATA / "taubench_airline.jsonl").read_text(encoding="utf-8").splitlines()[0]
    twice = tmp_path / "twice.jsonl"
    twice.write_text(line + "\n" + line + "\n", encoding="utf-8")
    assert main(["sessions", "import", str(twice), "--config", config]) == 0
    assert capsys.readouterr().out.strip().endswith("imported 1 sessions (62 messages) from "
                                                    f"{twice}; skipped 1 repeated ids in the file")
