"""The inbound journal: accepted messages whose turn has not finished yet, on disk under `home`.

Owns `InboundJournal`. An accepted message is written here before its turn is
queued and removed once its reply is recorded in the outbox (or the turn
failed and the chat was told). After a SIGTERM past the grace period or a
crash, `recover` hands the unfinished messages back so the restarted gateway
re-runs them: nothing accepted is lost. Processes sharing a home each keep
their own entries under a lock; only an exited process's entries are taken
over, by atomic renames, so no message is replayed twice or stolen from a
live process. A line keeps every field of the message, its trace context
(`traceparent`) included, so a re-run continues the message's trace.
Knows nothing of sessions or agents.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import operator
import os
import re
import threading
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import filelock
import structlog

from adapters.base import Attachment, InboundMessage, Quote

log = structlog.get_logger(__name__)

SUFFIX = ".json"  # one file per message: the format of earlier versions, still recovered
LOG_SUFFIX = ".log"
BAD_SUFFIX = ".bad"
COMPACT_AFTER_BYTES = 1024 * 1024
_FIELDS = tuple(name for name in InboundMessage.__dataclass_fields__ if name not in ("attachments", "kind", "quote"))
_VALUES = operator.attrgetter(*_FIELDS)  # one C call for every field (not a getattr each)


def _to_json(message: InboundMessage, *, ensure_ascii: bool = False) -> str:
    fields: dict[str, Any] = dict(zip(_FIELDS, _VALUES(message)))
    fields["attachments"] = [asdict(item) for item in message.attachments]
    if message.quote is not None:
        fields["quote"] = asdict(message.quote)
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
    quote = data.get("quote")
    data["quote"] = Quote(**quote) if quote else None
    return InboundMessage(**data)


class InboundJournal:
    """Unfinished messages as lines of an append-only file, in a directory of this process's own.

    A record is one line `+<entry> <json>`, finishing it one line `-<entry>`;
    a burst is one write. When nothing is unfinished and the file has grown,
    it starts over, so it never grows without bound. Several processes may
    share one home: each writes under `<directory>/<node>/` and holds
    `<directory>/<node>.lock` while it runs. `recover` takes over the files of
    every node whose lock is free (that process has exited or crashed; the OS
    releases a dead process's lock), never those of a live one.

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
        self._log_path = os.path.join(self._own_dir, self._unique + LOG_SUFFIX)
        self._fd: int | None = None
        self._live: dict[str, bytes] = {}  # unfinished entry -> its record line (rewritten when compacting)
        self._log_bytes = 0
        self._write_lock = threading.Lock()  # `record_many` runs in a worker thread beside `done`

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
        with self._write_lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)
            if not self._live:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._log_path)
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

    def _append(self, data: bytes, added: dict[str, bytes] | None = None, done: str | None = None) -> None:
        """One write to this process's file (opened on first use); then the in-memory view follows."""
        with self._write_lock:
            if self._fd is None:
                self._fd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
            self._log_bytes += len(data)
            if added:
                self._live.update(added)
            if done is not None:
                self._live.pop(done, None)
                if not self._live and self._log_bytes >= COMPACT_AFTER_BYTES:
                    os.ftruncate(self._fd, 0)  # nothing unfinished: the history can go
                    self._log_bytes = 0

    def record(self, message: InboundMessage) -> str:
        """Write `message`; returns the entry id for `done` (call `open` first).

        One append, without a temp file and rename: a line torn by a crash
        mid-write is a message that was never queued (its turn is submitted
        only after this returns), and `recover` sets such a line aside.
        """
        outcome = self.record_many([message])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def record_many(self, messages: list[InboundMessage]) -> list[str | Exception]:
        """Record each message, all in one write; per message its entry or the write's error."""
        lines: dict[str, bytes] = {}
        outcomes: list[str | Exception] = []  # in the order of `messages`
        for message in messages:
            entry = f"{message.timestamp:020.6f}-{self._unique}{next(self._serial):08x}"
            try:
                lines[entry] = b"+" + entry.encode("ascii") + b" " + _encode(message) + b"\n"
            except (ValueError, TypeError, RecursionError) as exc:  # one bad message never fails the burst
                outcomes.append(exc)
            else:
                outcomes.append(entry)
        try:
            self._append(b"".join(lines.values()), added=lines)
        except OSError as exc:
            return [exc for _ in messages]
        return outcomes

    def done(self, entry: str) -> None:
        """Forget an entry (its reply is in the outbox, or the chat was told of a failure)."""
        try:
            self._append(b"-" + entry.encode("ascii") + b"\n", done=entry)
        except OSError as exc:  # the entry replays after a restart: a duplicate reply at worst, never a loss
            log.warning("journal.done_failed", entry=entry, error=type(exc).__name__)

    def _adopt(self, node_dir: Path) -> None:
        """Move a dead node's files into ours (renames are atomic; a racing adopter loses cleanly)."""
        lock = filelock.FileLock(str(self.directory / f"{node_dir.name}.lock"))
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            return  # that process is alive: its turns are its own
        try:
            self._own.mkdir(parents=True, exist_ok=True)
            for path in [*node_dir.glob(f"*{SUFFIX}"), *node_dir.glob(f"*{LOG_SUFFIX}")]:
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
        if not self._own.is_dir():
            return []
        self._sweep_locks()
        found: list[tuple[str, InboundMessage]] = []
        with self._write_lock:
            live, sources = _read_node(self._own)
            for entry in sorted(live):
                try:
                    found.append((entry, _from_json(live[entry].decode("utf-8"))))
                except (ValueError, TypeError, KeyError, RecursionError) as exc:
                    log.warning("journal.unreadable", entry=entry, error=type(exc).__name__)
                    self._set_aside(live.pop(entry))
            self._rewrite(live, sources)
        return found

    def _rewrite(self, live: dict[str, bytes], sources: list[Path]) -> None:
        """Our file becomes exactly the unfinished entries (written aside, then renamed over); the rest goes."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        lines = {entry: b"+" + entry.encode("ascii") + b" " + data + b"\n" for entry, data in live.items()}
        temp = self._log_path + ".tmp"
        with open(temp, "wb") as handle:
            handle.write(b"".join(lines.values()))
        os.replace(temp, self._log_path)
        for path in sources:
            if str(path) != self._log_path:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        self._live, self._log_bytes = lines, sum(len(line) for line in lines.values())

    def _set_aside(self, data: bytes) -> None:
        with open(os.path.join(self._own_dir, self._unique + BAD_SUFFIX), "ab") as handle:
            handle.write(data + b"\n")

    def pending_count(self) -> int:
        if not self.directory.is_dir():
            return 0
        return sum(len(_read_node(node_dir)[0]) for node_dir in self.directory.iterdir() if node_dir.is_dir())


def _read_node(node_dir: Path) -> tuple[dict[str, bytes], list[Path]]:
    """The unfinished entries of a node directory (entry -> JSON bytes), and the files they came from.

    Reads this format's files (`*.log`) and one-file-per-message entries (`*.json`) left by earlier versions.
    """
    added: dict[str, bytes] = {}
    finished: set[str] = set()
    sources = sorted(node_dir.glob(f"*{SUFFIX}"))
    for path in sources:
        with contextlib.suppress(FileNotFoundError):
            added[path.name[: -len(SUFFIX)]] = path.read_bytes()
    logs = sorted(node_dir.glob(f"*{LOG_SUFFIX}"))
    for path in logs:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        lines = data.split(b"\n")
        if lines[-1]:
            log.warning("journal.torn_line", file=path.name)  # a crash mid-write: never queued
        for line in lines[:-1]:
            if line[:1] == b"-":
                finished.add(line[1:].decode("ascii", "replace"))
            elif line[:1] == b"+" and b" " in line:
                entry, _, payload = line[1:].partition(b" ")
                added[entry.decode("ascii", "replace")] = payload
    return {entry: data for entry, data in added.items() if entry not in finished}, [*sources, *logs]


__all__ = ["InboundJournal"]
