"""The durable stores a gateway (or a CLI command) uses, chosen by `store.url`.

Owns `Stores` and `build_stores`: with `store.url` unset, sessions live in
`<home>/state.db`, notes under `<home>/memories/` and skills under
`<home>/skills/`; with a postgresql:// URL all three live in that database, so replicas with separate homes on separate
machines share every chat's history and notes. Building does no I/O; the
session store's `open()` (at gateway start) connects the pool the notes use
as well.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from agent.memory.notes import NotesStore
from agent.memory.postgres import postgres_notes
from agent.memory.scanner import scan_procedure
from agent.skills.library import SkillLibrary
from agent.skills.postgres import PostgresSkills
from agent.store import SessionStore, is_postgres_url, store_for
from agent.store.postgres import PostgresSessionStore
from gateway.config import ChorusConfig

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
    mode: StoreMode
    identity: str


def build_stores(config: ChorusConfig) -> Stores:
    """The session and notes stores `config` selects (unopened)."""
    home, url = config.home_dir, config.store.url
    if url is not None and is_postgres_url(url):
        shared = PostgresSessionStore(url)
        notes = NotesStore(home, config.memory, files=postgres_notes(shared))
        skills = SkillLibrary(home / SKILLS_DIRNAME, scanner=scan_procedure, storage=PostgresSkills(shared))
        return Stores(shared, notes, skills, "postgresql", shared.location)
    skills = SkillLibrary(home / SKILLS_DIRNAME, scanner=scan_procedure)
    return Stores(store_for(url, home), NotesStore(home, config.memory), skills, "sqlite", str(home))


@contextmanager
def opened_notes(config: ChorusConfig) -> Iterator[NotesStore]:
    """The notes store for a CLI command, its database connected for the duration when shared."""
    stores = build_stores(config)
    if stores.mode == "sqlite":
        yield stores.notes
        return
    with stores.sessions:
        yield stores.notes
