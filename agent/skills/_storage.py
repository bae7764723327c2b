"""Where skills are kept: `SkillStorage`, and `DirectorySkills`, the `<home>/skills/` layout.

`SkillLibrary` owns the rules (names, limits, the scan before every write);
this is only the texts of each skill by relative path (SKILL.md,
references/…), a lock that excludes other processes (and replicas) during a
check-then-write, and a recoverable delete. `agent.skills.postgres` keeps the
same texts in PostgreSQL for replicas that share no disk.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Final, Protocol

import filelock

from agent.atomic_files import atomic_write

SKILL_FILE: Final = "SKILL.md"
SUPPORT_DIRS: Final = ("references", "templates", "scripts")
LOCK_TIMEOUT_SECONDS: Final = 30.0
TRASH_DIR: Final = ".trash"
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")


class SkillStorage(Protocol):
    """The texts of every skill, by skill name and relative path."""

    def locked(self) -> AbstractContextManager[None]: ...

    def read(self, name: str, relative: str) -> str | None: ...

    def write(self, name: str, relative: str, content: str) -> None: ...

    def skill_names(self) -> list[str]:
        """Names of the skills that have a SKILL.md, sorted."""
        ...

    def files(self, name: str) -> tuple[str, ...]:
        """The skill's supporting files (`references/x.md`, …), sorted."""
        ...

    def trash(self, name: str, stamp: int) -> str:
        """Take the skill out of the library, recoverably; return where it went."""
        ...


class DirectorySkills:
    """Skills as directories under `root`, locked with one lock file."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(self.root / ".lock"), timeout=LOCK_TIMEOUT_SECONDS):
            yield

    def read(self, name: str, relative: str) -> str | None:
        path = self.root / name / relative
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    def write(self, name: str, relative: str, content: str) -> None:
        atomic_write(self.root / name / relative, content)

    def skill_names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return [d.name for d in sorted(self.root.iterdir()) if _NAME.fullmatch(d.name) and (d / SKILL_FILE).is_file()]

    def files(self, name: str) -> tuple[str, ...]:
        directory = self.root / name
        return tuple(
            f"{sub}/{path.name}"
            for sub in SUPPORT_DIRS
            if (directory / sub).is_dir()
            for path in sorted((directory / sub).iterdir())
            if path.is_file() and not path.name.startswith(".")
        )

    def trash(self, name: str, stamp: int) -> str:
        trash = self.root / TRASH_DIR
        trash.mkdir(exist_ok=True)
        target = trash / f"{name}-{stamp}"
        os.replace(self.root / name, target)
        return str(target)
