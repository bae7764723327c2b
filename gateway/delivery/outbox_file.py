"""`JournaledOutbox`: an `Outbox` wrapper that survives a restart by journaling puts and acks to a file.

The embedded `MemoryOutbox` lives only as long as the process; wrapped in
this, a reply recorded before sending and not acknowledged is restored on the
next start (`restore`) and resent. The Redis outbox is durable already and is
used unwrapped. Knows only the `Outbox` Protocol, never a backend.
"""
from __future__ import annotations

import json
import operator
import os
from pathlib import Path

import structlog

from gateway.coord.base import OutboundItem, Outbox, PendingOutbound

log = structlog.get_logger(__name__)

COMPACT_AFTER_RECORDS = 10_000
_ITEM_FIELDS = tuple(OutboundItem.__dataclass_fields__)
_ITEM_VALUES = operator.attrgetter(*_ITEM_FIELDS)  # one C call for every field


def _item_json(item: OutboundItem) -> str:
    """`item.to_json()` without `dataclasses.asdict` (same text: every field is a scalar)."""
    return json.dumps(dict(zip(_ITEM_FIELDS, _ITEM_VALUES(item))), ensure_ascii=False, separators=(",", ":"))


def _put_line(item_id: str, item: OutboundItem) -> bytes:
    """`{"put": id, "item": {the item's fields}}` and a newline, as UTF-8 (what `restore` reads).

    The item is nested as an object: encoding its JSON a second time, as a string, cost as much as the first.
    Files of earlier versions hold it as a string; `restore` reads both.
    """
    return f'{{"put": {json.dumps(item_id)}, "item": {_item_json(item)}}}\n'.encode()


def _ack_line(item_id: str) -> bytes:
    return f'{{"ack": {json.dumps(item_id)}}}\n'.encode()


class JournaledOutbox:
    """Delegates to `inner`; every put and ack is also appended to `path` (JSON lines).

    Args:
        inner: the outbox that does the work.
        path: the journal file, normally `<home>/outbox.jsonl`.
    """

    def __init__(self, inner: Outbox, path: Path) -> None:
        self._inner = inner
        self._path = path
        self._fd: int | None = None
        self._unacked: set[str] = set()
        self._records = 0

    def _append(self, line: bytes) -> None:
        if self._fd is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # One unbuffered write per record (no text layer to flush): a process crash after put() never loses it.
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view):]
        self._records += 1

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    async def restore(self) -> int:
        """Put the journal's unacknowledged items back into `inner`; returns how many."""
        self.close()
        if not self._path.exists():
            return 0
        items: dict[str, OutboundItem] = {}
        for line in self._path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                if "put" in record:
                    raw = record["item"]
                    items[record["put"]] = OutboundItem.from_json(raw) if isinstance(raw, str) else OutboundItem.from_data(raw)
                elif "ack" in record:
                    items.pop(record["ack"], None)
            except (ValueError, KeyError, TypeError):
                log.warning("outbox.journal_line_skipped")
        temp = self._path.with_suffix(".tmp")
        with temp.open("w", encoding="utf-8") as handle:
            for item in items.values():
                new_id = await self._inner.put(item)
                self._unacked.add(new_id)
                handle.write(_put_line(new_id, item).decode())
        os.replace(temp, self._path)
        return len(items)

    async def put(self, item: OutboundItem) -> str:
        """Record `item`; when the journal line cannot be written (a full disk) it is not recorded at all.

        Raises:
            OSError: the journal could not be written; the caller keeps the inbound message and runs it again.
        """
        item_id = await self._inner.put(item)
        try:
            self._append(_put_line(item_id, item))
        except OSError:
            await self._inner.ack(item_id)  # not durable, so not pending: the re-run records it again, once
            raise
        self._unacked.add(item_id)
        return item_id

    async def ack(self, item_id: str) -> None:
        await self._inner.ack(item_id)
        self._append(_ack_line(item_id))
        self._unacked.discard(item_id)
        if not self._unacked and self._records >= COMPACT_AFTER_RECORDS:
            # Nothing is pending: the whole history can go, so the file never grows without bound.
            self.close()
            self._path.write_text("", encoding="utf-8")
            self._records = 0

    async def pending(self, *, older_than: float = 0.0) -> list[PendingOutbound]:
        return await self._inner.pending(older_than=older_than)

    async def claim(self, item_id: str, *, owner: str, ttl: float) -> bool:
        return await self._inner.claim(item_id, owner=owner, ttl=ttl)


__all__ = ["JournaledOutbox"]
