"""Files of one chat's notes: entry parsing, atomic writes, the cross-process lock, drift detection.

Owns the on-disk format (entries separated by `\\n§\\n`), `atomic_write`
(temp file in the same directory + fsync + `os.replace`), `chat_lock`
(a `filelock` lock file per chat directory) and `DriftGuard`, which remembers
the hash of what the tool last wrote and backs up a file that changed behind
its back. Knows nothing of scanning, limits or tools.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import filelock
import structlog

if TYPE_CHECKING:
    from agent.memory._storage import ChatFiles

SEPARATOR: Final = "\n§\n"
LOCK_FILENAME: Final = ".lock"
STATE_FILENAME: Final = ".state.json"
LOCK_TIMEOUT_SECONDS: Final = 30.0

log = structlog.get_logger(__name__)
Clock = Callable[[], float]


def parse_entries(text: str) -> list[str]:
    """Split a notes file into its non-empty entries (a lone `§` line separates entries)."""
    normalized = text.replace("\r\n", "\n")
    entries: list[str] = []
    current: list[str] = []
    for line in normalized.split("\n"):
        if line.strip() == "§":
            entries.append("\n".join(current))
            current = []
        else:
            current.append(line)
    entries.append("\n".join(current))
    return [entry.strip() for entry in entries if entry.strip()]


def render_entries(entries: Sequence[str]) -> str:
    """The file text of `entries` (and the text whose length counts against the limit)."""
    return SEPARATOR.join(entries)


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist. Undecodable bytes are kept visible as U+FFFD."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def chat_lock(directory: Path) -> filelock.BaseFileLock:
    """The cross-process lock of one chat directory (re-entrant within a thread)."""
    return filelock.FileLock(str(directory / LOCK_FILENAME), timeout=LOCK_TIMEOUT_SECONDS)


def digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class DriftReport:
    """A notes file changed outside the memory tool (a shell append, a patch, an editor).

    Attributes:
        filename: "MEMORY.md" or "USER.md".
        backup: the file name of the copy taken when the change was noticed ("" if the file was deleted).
        detected_at: when it was noticed (seconds since the epoch).
    """

    filename: str
    backup: str
    detected_at: float

    def describe(self) -> str:
        if not self.backup:
            return f"{self.filename} was deleted outside the memory tool"
        return f"{self.filename} was changed outside the memory tool; the changed file was backed up to {self.backup}"


class DriftGuard:
    """Remembers the hash of each notes file as the tool last wrote it, in `.state.json` beside them.

    Call `check` under the chat lock before using a file; call `record` after writing it.
    A changed file is copied to `<name>.<UTC timestamp>.bak` and then adopted as
    the new baseline, so each change is reported once.
    """

    def __init__(self, files: ChatFiles, *, clock: Clock = time.time) -> None:
        self._files = files
        self._clock = clock

    def _load(self) -> dict[str, str | None]:
        try:
            raw = json.loads(self._files.read(STATE_FILENAME) or "{}")
        except ValueError:
            return {}
        hashes = raw.get("hashes") if isinstance(raw, dict) else None
        if not isinstance(hashes, dict):
            return {}
        return {str(key): value if isinstance(value, str) else None for key, value in hashes.items()}

    def _save(self, hashes: dict[str, str | None]) -> None:
        self._files.write(STATE_FILENAME, json.dumps({"hashes": hashes}, sort_keys=True))

    def check(self, filename: str, text: str | None) -> DriftReport | None:
        """Compare the file's current `text` with the recorded hash; back up and report a difference."""
        hashes = self._load()
        current = digest(text)
        if hashes.get(filename) == current or (filename not in hashes and text is None):
            return None
        now = self._clock()
        backup = self._backup(filename, text) if text is not None else ""
        hashes[filename] = current
        self._save(hashes)
        report = DriftReport(filename=filename, backup=backup, detected_at=now)
        log.warning("memory.drift_detected", filename=filename, backup=backup, directory=self._files.label)
        return report

    def record(self, filename: str, text: str | None) -> None:
        """Remember `text` as what the tool wrote to `filename` (None: the file was removed)."""
        hashes = self._load()
        hashes[filename] = digest(text)
        self._save(hashes)

    def forget(self) -> None:
        self._files.delete(STATE_FILENAME)

    def _backup(self, filename: str, text: str) -> str:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._clock()))
        name = f"{filename}.{stamp}.bak"
        counter = 1
        taken = set(self._files.names())
        while name in taken:
            counter += 1
            name = f"{filename}.{stamp}-{counter}.bak"
        self._files.write(name, text)
        return name


def backups(files: ChatFiles, filename: str | None = None) -> list[str]:
    """Names of the drift backups of a chat (of one file, or all), oldest first."""
    pattern = f"{filename}.*.bak" if filename else "*.bak"
    return sorted(name for name in files.names() if fnmatch.fnmatchcase(name, pattern))
