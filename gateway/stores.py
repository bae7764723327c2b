"""The durable stores a gateway (or a CLI command) uses, chosen by `store.url`.

Owns `Stores`, `build_stores` and `window_store`: with `store.url` unset, sessions live in
`<home>/state.db`, notes under `<home>/memories/`, skills under `<home>/skills/`,
per-chat settings in `<home>/chats.db`, pairing in `<home>/pairing.db` and learned
model windows in `<home>/model_windows.json`; with a postgresql:// URL all of them
live in that database, so replicas with separate homes on separate machines share
every chat's history, notes, `/model`, usage and pairing. Building does no I/O; the
session store's `open()` (at gateway start) connects the pool the others borrow.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agent.memory.notes import NotesStore
from agent.memory.scanner import scan_procedure
from agent.model_windows import WINDOWS_FILE, FileWindowStore, WindowStore
from agent.skills.library import SkillLibrary
from agent.store import SessionStore, is_postgres_url, store_for
from gateway.chats.pairing import PAIRING_DB_NAME, PairingStore, SqlitePairingStore
from gateway.chats.store import CHATS_DB_NAME, ChatStore, SqliteChatStore
from gateway.config import ChorusConfig

if TYPE_CHECKING:
    from gateway.approvals.store import ApprovalStore
    from gateway.schedules.store import ScheduleStore

StoreMode = Literal["sqlite", "postgresql"]
SKILLS_DIRNAME = "skills"


@dataclass(frozen=True, slots=True)
class Stores:
    """The stores of one gateway; `identity` names where sessions live, the same on every replica sharing them.

    The agent cache key includes `identity`: replicas with separate homes on one
    PostgreSQL store must see each other's turns as the same session's.
    """

    sessions: SessionStore
    notes: NotesStore
    skills: SkillLibrary
    chats: ChatStore
    pairing: PairingStore
    mode: StoreMode
    identity: str


def build_stores(config: ChorusConfig) -> Stores:
    """The session and notes stores `config` selects (unopened)."""
    home, url = config.home_dir, config.store.url
    if url is not None and is_postgres_url(url):
        return _postgres_stores(config, url)
    skills = SkillLibrary(home / SKILLS_DIRNAME, scanner=scan_procedure)
    return Stores(
        store_for(url, home), NotesStore(home, config.memory, skills=skills), skills, SqliteChatStore(home / CHATS_DB_NAME),
        SqlitePairingStore(home / PAIRING_DB_NAME), "sqlite", str(home),
    )


def _postgres_stores(config: ChorusConfig, url: str) -> Stores:
    # Imported here: a SQLite home (and every offline command on one) never loads the PostgreSQL driver.
    from agent.memory.postgres import postgres_notes
    from agent.skills.postgres import PostgresSkills
    from agent.store.postgres import PostgresSessionStore
    from gateway.chats.pairing_postgres import PostgresPairingStore
    from gateway.chats.store.postgres import PostgresChatStore

    home = config.home_dir
    shared = PostgresSessionStore(url)
    skills = SkillLibrary(home / SKILLS_DIRNAME, scanner=scan_procedure, storage=PostgresSkills(shared))
    notes = NotesStore(home, config.memory, files=postgres_notes(shared), skills=skills)
    chats, pairing = PostgresChatStore(shared), PostgresPairingStore(shared)
    return Stores(shared, notes, skills, chats, pairing, "postgresql", shared.location)


def window_store(config: ChorusConfig) -> WindowStore:
    """Where learned model windows live: the shared database, or `model_windows.json` under home."""
    url = config.store.url
    if url is not None and is_postgres_url(url):
        from agent.model_windows_postgres import PostgresWindowStore  # here: see `_postgres_stores`

        return PostgresWindowStore(url)
    return FileWindowStore(config.home_dir / WINDOWS_FILE)


def approval_store(config: ChorusConfig, stores: Stores) -> ApprovalStore:
    """Where pending tool approvals live: the shared database (any replica answers), or `approvals.db` under home."""
    # Imported here: the package's gateway side loads aiohttp, which offline commands never need.
    from gateway.approvals.store import APPROVALS_DB_NAME, SqliteApprovalStore

    if stores.mode == "postgresql":
        from agent.store.postgres import PostgresSessionStore  # here: see `_postgres_stores`
        from gateway.approvals.postgres import PostgresApprovalStore

        assert isinstance(stores.sessions, PostgresSessionStore)  # mode "postgresql" is built with one
        return PostgresApprovalStore(stores.sessions)
    return SqliteApprovalStore(config.home_dir / APPROVALS_DB_NAME)


def schedule_store(config: ChorusConfig, stores: Stores) -> ScheduleStore:
    """Where scheduled jobs and their runs live: the shared database (every replica claims there), or under home."""
    from gateway.schedules.store import SCHEDULES_DB_NAME, SqliteScheduleStore

    if stores.mode == "postgresql":
        from agent.store.postgres import PostgresSessionStore  # here: see `_postgres_stores`
        from gateway.schedules.postgres import PostgresScheduleStore

        assert isinstance(stores.sessions, PostgresSessionStore)  # mode "postgresql" is built with one
        return PostgresScheduleStore(stores.sessions)
    return SqliteScheduleStore(config.home_dir / SCHEDULES_DB_NAME)


@contextmanager
def opened_notes(config: ChorusConfig) -> Iterator[NotesStore]:
    """The notes store for a CLI command, its database connected for the duration when shared."""
    stores = build_stores(config)
    if stores.mode == "sqlite":
        yield stores.notes
        return
    with stores.sessions:
        yield stores.notes


@contextmanager
def opened_pairing(config: ChorusConfig) -> Iterator[PairingStore]:
    """The pairing store for `chorus pairing`, open (with the shared database's pool when shared) for the duration."""
    stores = build_stores(config)
    if stores.mode == "sqlite":
        stores.pairing.open()
        try:
            yield stores.pairing
        finally:
            stores.pairing.close()
        return
    with stores.sessions:
        yield stores.pairing


@contextmanager
def opened_schedules(config: ChorusConfig) -> Iterator[ScheduleStore]:
    """The schedule store for `chorus schedules`, open (with the shared database's pool when shared) for the duration."""
    stores = build_stores(config)
    store = schedule_store(config, stores)
    if stores.mode == "sqlite":
        store.open()
        try:
            yield store
        finally:
            store.close()
        return
    with stores.sessions:
        store.open()
        yield store
