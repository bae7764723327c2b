"""Where one chat's notes files live: `ChatFiles`, and `DirectoryFiles`, the directory under home.

`ChatNotes` keeps MEMORY.md, USER.md, the drift state, drift backups and
staged writes as named texts of one chat; this Protocol is all it needs of
their storage, so the same rules (scan, limits, approval, drift) run over a
directory (one machine) or PostgreSQL rows (`agent.memory.postgres`, shared
by replicas). Every read-modify-write happens inside `locked()`, which
excludes other processes (and replicas) from the chat until it exits.
"""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

import filelock

from agent.atomic_files import atomic_write
from agent.memory._files import LOCK_FILENAME, chat_lock, read_text
from agent.memory._paths import claim_directory


class ChatFiles(Protocol):
    """One chat's named note texts."""

    @property
    def label(self) -> str:
        """A short name for logs (never the raw chat id)."""
        ...

    @property
    def location(self) -> str:
        """Where the texts live, for the operator."""
        ...

    def exists(self) -> bool: ...

    def locked(self) -> AbstractContextManager[None]:
        """Hold the chat's cross-process lock (re-entrant within one thread)."""
        ...

    def read(self, name: str) -> str | None: ...

    def write(self, name: str, text: str) -> None: ...

    def delete(self, name: str) -> None: ...

    def names(self) -> list[str]: ...

    def clear(self) -> int:
        """Delete every text of the chat; return how many there were."""
        ...


class DirectoryFiles:
    """A chat's notes as files in `<home>/memories/<chat dir>/`, locked with a lock file."""

    def __init__(self, directory: Path, chat_id: str) -> None:
        self.directory = directory
        self._chat_id = chat_id
        self._lock: filelock.BaseFileLock | None = None

    @property
    def label(self) -> str:
        return self.directory.name

    @property
    def location(self) -> str:
        return str(self.directory)

    def exists(self) -> bool:
        return self.directory.exists()

    @contextmanager
    def locked(self) -> Iterator[None]:
        if self._lock is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock = chat_lock(self.directory)
        elif not self.directory.exists():  # reset removed it
            self.directory.mkdir(parents=True, exist_ok=True)
        claim_directory(self.directory, self._chat_id)
        with self._lock:
            yield

    def read(self, name: str) -> str | None:
        return read_text(self.directory / name)

    def write(self, name: str, text: str) -> None:
        atomic_write(self.directory / name, text)

    def delete(self, name: str) -> None:
        (self.directory / name).unlink(missing_ok=True)

    def names(self) -> list[str]:
        if not self.directory.exists():
            return []
        return sorted(path.name for path in self.directory.iterdir() if path.is_file())

    def clear(self) -> int:
        if not self.directory.exists():
            return 0
        with self.locked():
            count = sum(1 for path in self.directory.iterdir() if path.is_file() and path.name != LOCK_FILENAME)
        shutil.rmtree(self.directory, ignore_errors=True)
        return count
