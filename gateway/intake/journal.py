"""The inbound journal: accepted messages whose turn has not finished yet, on disk under `home`.

Owns `InboundJournal`. An accepted message is written here before its turn is
queued and removed once its reply is recorded in the outbox (or the turn
failed and the chat was told). After a SIGTERM past the grace period or a
crash, `recover` hands the unfinished messages back so the restarted gateway
re-runs them: nothing accepted is lost. Processes sharing a home each keep
their own entries under a lock; only an exited process's entries are taken
over, by atomic renames, so no message is replayed twice or stolen from a
live process.
Knows nothing of sessions or agents.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import filelock
import structlog

from adapters.base import Attachment, InboundMessage

log = structlog.get_logger(__name__)

SUFFIX = ".json"
_FIELDS = tuple(name for name in InboundMessage.__dataclass_fields__ if name not in ("attachments", "kind"))


def _to_json(message: InboundMessage, *, ensure_ascii: bool = False) -> str:
    fields = {name: getattr(message, name) for name in _FIELDS}
    fields["attachments"] = [asdict(item) for item in message.attachments]
    return json.dumps(fields, ensure_ascii=ensure_ascii)


def _encode(message: InboundMessage) -> bytes:
    """The entry's bytes, always valid UTF-8.

    Adapters hand on valid text, but a lone surrogate that slips through must
    not stop intake: escaped as `\\udXXX` by `ensure_ascii` it is plain ASCII
    and loads back as the same string (a pair split in two code points, joined).
    """
    try:
        return _to_json(message).encode("utf-8")
    except UnicodeEncodeError:
        return _to_json(message, ensure_ascii=True).encode("ascii")


def _from_json(raw: str) -> InboundMessage:
    data: dict[str, Any] = json.loads(raw)
    data.pop("kind", None)
    data["attachments"] = tuple(Attachment(**item) for item in data.get("attachments") or ())
    return InboundMessage(**data)


class InboundJournal:
    """One file per unfinished message, in a directory of this process's own.

    Several processes may share one home: each writes under `<directory>/<node>/`
    and holds `<directory>/<node>.lock` while it runs. `recover` takes over the
    entries of every node whose lock is free (that process has exited or
    crashed; the OS releases a dead process's lock), never those of a live one.

    Args:
        directory: normally `<home>/inflight`.
        node: this process's name (any text; made filename-safe here).
    """

    def __init__(self, directory: Path, *, node: str = "local") -> None:
        self.directory = directory
        self.node = re.sub(r"[^A-Za-z0-9_.-]", "_", node) or "local"
        self._lock: filelock.BaseFileLock | None = None
        # Entry names: a per-process random part plus a counter (one `uuid4` per process, not per message)
        # keeps names unique across processes and restarts sharing a node name.
        self._unique = uuid.uuid4().hex[:12]
        self._serial = itertools.count()
        self._own_dir = str(directory / self.node)  # as text: the hot path joins strings, not Paths

    @property
    def _own(self) -> Path:
        return self.directory / self.node

    def open(self) -> None:
        """Create this node's directory and take its lock (held until `close`)."""
        if self._lock is not None:
            return
        self._own.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(str(self.directory / f"{self.node}.lock"))
        lock.acquire(timeout=0)
        self._lock = lock

    def close(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            try:
                self._own.rmdir()  # only when empty: unfinished entries stay for the next start
            except OSError:
                lock.release()
                return
            # Nothing left to take over: the lock file goes too (node names are per process, so
            # one would otherwise be left behind by every start).
            with contextlib.suppress(OSError):
                os.unlink(lock.lock_file)
            lock.release()

    def record(self, message: InboundMessage) -> str:
        """Write `message`; returns the entry id for `done` (call `open` first).

        One exclusive create + write + close, without a temp file and rename:
        a file torn by a crash mid-write is a message that was never queued
        (its turn is submitted only after this returns), and `recover` sets
        such a file aside as `.bad`, which is all the temp file bought.
        """
        entry = f"{message.timestamp:020.6f}-{self._unique}{next(self._serial):08x}"
        data = _encode(message)
        fd = os.open(os.path.join(self._own_dir, entry + SUFFIX), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        return entry

    def record_many(self, messages: list[InboundMessage]) -> list[str | Exception]:
        """`record` each message (one trip to a worker thread for a burst); per message its entry or error."""
        entries: list[str | Exception] = []
        for message in messages:
            try:
                entries.append(self.record(message))
            except (OSError, ValueError, TypeError) as exc:  # one bad message never fails the burst
                entries.append(exc)
        return entries

    def done(self, entry: str) -> None:
        """Forget an entry (its reply is in the outbox, or the chat was told of a failure)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self._own_dir, entry + SUFFIX))

    def _adopt(self, node_dir: Path) -> None:
        """Move a dead node's entries into ours (renames are atomic; a racing adopter loses cleanly)."""
        lock = filelock.FileLock(str(self.directory / f"{node_dir.name}.lock"))
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            return  # that process is alive: its turns are its own
        try:
            self._own.mkdir(parents=True, exist_ok=True)
            for path in node_dir.glob(f"*{SUFFIX}"):
                with contextlib.suppress(FileNotFoundError):
                    os.rename(path, self._own / path.name)
            with contextlib.suppress(OSError):
                node_dir.rmdir()
                os.unlink(lock.lock_file)  # held by us: no live process can be using it
        finally:
            lock.release()

    def _sweep_locks(self) -> None:
        """Delete the lock files of exited processes that left no entries (older versions kept them all)."""
        for path in self.directory.glob("*.lock"):
            node = path.name[: -len(".lock")]
            if node == self.node or (self.directory / node).is_dir():
                continue
            lock = filelock.FileLock(str(path))
            try:
                lock.acquire(timeout=0)
            except filelock.Timeout:
                continue  # a live process (its directory is about to appear)
            try:
                with contextlib.suppress(OSError):
                    path.unlink()
            finally:
                lock.release()

    def recover(self) -> list[tuple[str, InboundMessage]]:
        """Take over the entries of exited processes (and our own), oldest first."""
        if not self.directory.is_dir():
            return []
        for node_dir in self.directory.iterdir():
            if node_dir.is_dir() and node_dir.name != self.node:
                self._adopt(node_dir)
        self._sweep_locks()
        found: list[tuple[str, InboundMessage]] = []
        for path in sorted(self._own.glob(f"*{SUFFIX}")) if self._own.is_dir() else []:
            try:
                found.append((path.name[: -len(SUFFIX)], _from_json(path.read_text(encoding="utf-8"))))
            except (ValueError, TypeError, KeyError, RecursionError) as exc:
                log.warning("journal.unreadable", entry=path.name, error=type(exc).__name__)
                path.rename(path.with_name(path.name + ".bad"))
        return found

    def pending_count(self) -> int:
        return sum(1 for _ in self.directory.glob(f"*/*{SUFFIX}")) if self.directory.is_dir() else 0


__all__ = ["InboundJournal"]
