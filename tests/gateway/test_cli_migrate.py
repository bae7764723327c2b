"""`chorus sessions migrate --to URL`: a SQLite home copied into PostgreSQL, verified, idempotent, on the real server."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from agent.memory.notes import NotesStore
from agent.memory.postgres import postgres_notes
from agent.memory.scanner import scan
from agent.messages import assistant, user
from agent.model_windows import WINDOWS_FILE, FileWindowStore, LearnedWindow
from agent.model_windows_postgres import PostgresWindowStore
from agent.settings import MemorySettings
from agent.skills import SkillLibrary
from agent.skills.postgres import PostgresSkills
from agent.store import SqliteSessionStore, StoredMessage
from agent.store.postgres import PostgresSessionStore
from gateway.chats.pairing import PAIRING_DB_NAME, SqlitePairingStore
from gateway.chats.pairing_postgres import PostgresPairingStore
from gateway.chats.store import CHATS_DB_NAME, SqliteChatStore, Usage
from gateway.chats.store.postgres import PostgresChatStore
from gateway.cli import main
from tests.postgres import fresh_database

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture
def config(home: Path, tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(f"home: {home}\n", encoding="utf-8")
    return str(path)


@pytest.fixture
def target() -> Iterator[str]:
    with fresh_database("chorus_migrate") as url:
        yield url


def _fill(home: Path, config: str) -> tuple[str, str]:
    """Imported real sessions plus a live chat with a compression and a rotation; (open session id, parent id)."""
    assert main(["sessions", "import", str(DATA / "taubench_airline.jsonl"), "--config", config]) == 0
    with SqliteSessionStore(home / "state.db") as store:
        first = store.ensure_session("telegram:42", platform="telegram", chat_id="telegram:42", title="t")
        store.append(first.id, [user("the vpn gateway is vpn.example.org"), assistant("noted")], token_counts=[9, 2])
        store.replace_active(first.id, [user("[summary] vpn host known")])
        child = store.rotate(first.id, [user("[summary 2] still the vpn")])
        store.append(child.id, [user("and the backup window is 02:00")])
    return child.id, first.id


def _snapshot(store: SqliteSessionStore | PostgresSessionStore, session_id: str) -> list[StoredMessage]:
    return store.session_messages(session_id)


def test_migrate_copies_everything_and_a_rerun_copies_nothing(home: Path, config: str, target: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Every session keeps id, parent, state and messages; search works; a second run skips them all."""
    open_id, parent_id = _fill(home, config)
    local_notes = NotesStore(home, MemorySettings(write_approval="stage"))
    local_notes.chat("telegram:42").add("user", "Works night shifts.")
    (home / "memories").mkdir(exist_ok=True)
    files_notes = NotesStore(home, MemorySettings())
    files_notes.chat("telegram:42").add("memory", "Backups run at 02:00.")
    local_skills = SkillLibrary(home / "skills", scanner=scan)
    local_skills.create("deploy", "---\ndescription: how we deploy\n---\n1. Tag.\n")
    local_skills.create("deploy", "Check the dashboards.", file="references/after.md")
    assert main(["sessions", "migrate", "--to", target, "--config", config]) == 0
    first_out = capsys.readouterr().out
    assert main(["sessions", "migrate", "--to", target, "--config", config]) == 0
    second_out = capsys.readouterr().out
    with SqliteSessionStore(home / "state.db") as source, PostgresSessionStore(target) as copy:
        expected, got = source.stats(), copy.stats()
        assert (got.sessions, got.active_sessions, got.messages, got.archived_messages) == (
            expected.sessions, expected.active_sessions, expected.messages, expected.archived_messages
        )
        assert _snapshot(copy, parent_id) == _snapshot(source, parent_id)
        assert _snapshot(copy, open_id) == _snapshot(source, open_id)
        assert copy.active_session("telegram:42") == source.active_session("telegram:42")
        assert [(h.session_id, h.archived) for h in copy.search("telegram:42", "vpn gateway")][0] == (parent_id, True)
        some = source.list_sessions(limit=3)[-1].session.id
        assert copy.session_meta(some) == source.session_meta(some)
        # Notes and the approval queue came along: the shared store shows what the files showed.
        shared = NotesStore(home, MemorySettings(), files=postgres_notes(copy)).chat("telegram:42")
        before = files_notes.chat("telegram:42")
        assert [e.text for e in shared.snapshot().memory] == [e.text for e in before.snapshot().memory] == [
            "Backups run at 02:00."
        ]
        assert [p.content for p in shared.pending()] == ["Works night shifts."]
        assert shared.snapshot().drift == ()  # the drift state came along with the text it vouches for
        skills = SkillLibrary(home / "unused", scanner=scan, storage=PostgresSkills(copy))
        assert [(s.name, s.description, s.files) for s in skills.list_skills()] == [
            ("deploy", "how we deploy", ("references/after.md",))
        ]
    assert f"copied {expected.sessions} sessions" in first_out and "counts match" in first_out
    assert "notes of 1 chats (3 texts copied); 1 skills (2 files copied)" in first_out
    assert "copied 0 sessions (0 messages)" in second_out and f"{expected.sessions} were already there" in second_out
    assert "notes of 1 chats (0 texts copied); 1 skills (0 files copied)" in second_out


def test_migrate_copies_chat_settings_pairing_and_learned_windows(
    home: Path, config: str, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """/model, usage, paired senders, live codes and learned windows reach PostgreSQL once; a re-run doubles nothing."""
    _fill(home, config)
    local_chats = SqliteChatStore(home / CHATS_DB_NAME)
    local_chats.open()
    local_chats.set_model("telegram:42", "big-model")
    local_chats.add_usage("telegram:42", "telegram", Usage(100, 20, 3))
    local_chats.close()
    local_pairing = SqlitePairingStore(home / PAIRING_DB_NAME)
    local_pairing.open()
    code = local_pairing.code_for("telegram", "7", "Eve")
    waiting = local_pairing.code_for("telegram", "8", "Bob")
    assert code is not None and waiting is not None and local_pairing.approve("telegram", code.code) is not None
    local_pairing.close()
    FileWindowStore(home / WINDOWS_FILE).save("fake@default", LearnedWindow(4096, True, 1.0))
    for _ in range(2):
        assert main(["sessions", "migrate", "--to", target, "--config", config]) == 0
    first_out, second_out = capsys.readouterr().out.splitlines()[-2:]
    with PostgresSessionStore(target) as copy:
        record = PostgresChatStore(copy).get("telegram:42")
        pairing = PostgresPairingStore(copy)
        assert (record.model, record.usage) == ("big-model", Usage(100, 20, 3))
        assert pairing.is_approved("telegram", "7")
        assert [(c.code, c.user_id) for c in pairing.pending("telegram")] == [(waiting.code, "8")]
    assert PostgresWindowStore(target).load() == {"fake@default": LearnedWindow(4096, True, 1.0)}
    assert ("settings of 1 chats (1 copied), 1 paired senders (1 copied), 1 pairing codes (1 copied), "
            "1 learned model windows (1 copied)") in first_out
    assert "settings of 1 chats (0 copied), 1 paired senders (0 copied)" in second_out


def test_migrate_refuses_a_database_holding_other_sessions(home: Path, config: str, target: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A target with sessions the source does not have is someone else's store: nothing is copied."""
    _fill(home, config)
    with PostgresSessionStore(target) as other:
        other.ensure_session("web:x", platform="web", chat_id="x")
    assert main(["sessions", "migrate", "--to", target, "--config", config]) == 1
    assert "already holds 1 sessions that are not in" in capsys.readouterr().err
    with PostgresSessionStore(target) as other:
        assert other.stats().sessions == 1


def test_migrate_bad_input_is_one_line(home: Path, config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A URL that is not PostgreSQL, or a home without a store, exits 2 with the reason."""
    assert main(["sessions", "migrate", "--to", "sqlite:///x.db", "--config", config]) == 2
    assert "--to must be a postgresql://" in capsys.readouterr().err
    assert main(["sessions", "migrate", "--to", "postgresql://postgres@127.0.0.1/postgres", "--config", config]) == 2
    assert f"no SQLite session store at {home / 'state.db'}" in capsys.readouterr().err
