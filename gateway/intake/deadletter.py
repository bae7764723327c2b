"""Dead letters: inbound messages the gateway could not handle, kept under `home` for the operator.

Owns `DeadLetter` (what the admin API and the dashboard show) and
`DeadLetterBox`, one JSON file per quarantined message in
`<home>/deadletter/`, holding the whole message so nothing accepted is lost
(an operator can read it, fix the cause and send it again). A message is
quarantined when deciding, journaling or dispatching it raised: that one
message is set aside, intake goes on with the rest. A reply the platform
refuses for good (stage `delivery`: an empty text, a 400, a chat that is gone)
is kept the same way (`put_reply`), so the outbox goes on with the next one. Files are written
ASCII-escaped, so a message that could not be encoded elsewhere still can.
Knows nothing of sessions, agents or HTTP.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

import structlog

from adapters.base import InboundMessage
from gateway.coord.base import OutboundItem

log = structlog.get_logger(__name__)

Stage: TypeAlias = Literal["decide", "journal", "dispatch", "intake", "delivery"]
SUFFIX = ".json"
PREVIEW_CHARS = 200
MEMORY_KEPT = 500  # records kept in memory when there is no directory (or it cannot be written)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One quarantined message, as the operator sees it (the full message stays in the file)."""

    id: str
    at: float
    stage: Stage
    error: str  # the exception type (and a platform's status): never its text, which may quote user input or secrets
    platform: str
    chat_id: str
    delivery_id: str  # stage `delivery`: the outbox id of the reply
    text_preview: str
    stored: bool  # False: the file could not be written; the message is only in memory and the log

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


class DeadLetterBox:
    """Quarantined messages, one file each.

    Args:
        directory: normally `<home>/deadletter` (created at the first dead letter);
            None keeps records in memory only (tests, tools).
        clock: seconds since the epoch.
    """

    def __init__(self, directory: Path | None, *, clock: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self._clock = clock
        self._memory: deque[DeadLetter] = deque(maxlen=MEMORY_KEPT)
        self._unique = uuid.uuid4().hex[:8]
        self._serial = itertools.count()

    def put(self, message: InboundMessage, *, stage: Stage, error: BaseException) -> DeadLetter:
        """Quarantine `message`; returns its record (`stored` says whether it reached the disk)."""
        at = self._clock()
        record = DeadLetter(
            id=self._new_id(at), at=at, stage=stage, error=type(error).__name__,
            platform=message.platform, chat_id=message.chat_id, delivery_id=message.delivery_id,
            text_preview=_preview(message.text), stored=False,
        )
        return self._keep(record, dataclasses.asdict(message))

    def put_reply(self, item_id: str, item: OutboundItem, *, error: str) -> DeadLetter:
        """Keep a reply the platform refused for good (outbox id `item_id`); returns its record.

        `error` names the failure without its text (e.g. `AdapterError 400`, `empty text`).
        """
        at = self._clock()
        record = DeadLetter(
            id=self._new_id(at), at=at, stage="delivery", error=error, platform=item.platform, chat_id=item.chat_id,
            delivery_id=item_id, text_preview=_preview(item.text), stored=False,
        )
        return self._keep(record, dataclasses.asdict(item))

    def _new_id(self, at: float) -> str:
        return f"{at:017.6f}-{self._unique}{next(self._serial):06x}"

    def _keep(self, record: DeadLetter, body: dict[str, object]) -> DeadLetter:
        if self.directory is not None:
            try:
                self._write(record, body)
                record = dataclasses.replace(record, stored=True)
            except (OSError, TypeError, ValueError) as exc:
                log.error("deadletter.write_failed", error=type(exc).__name__, directory=str(self.directory))
        self._memory.append(record)
        return record

    def _write(self, record: DeadLetter, message: dict[str, object]) -> None:
        assert self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        body = {"record": {**record.to_json(), "stored": True}, "message": message}
        path = self.directory / (record.id + SUFFIX)
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps(body, ensure_ascii=True), encoding="ascii")  # ASCII: always encodable
        os.replace(temp, path)

    def recent(self, *, limit: int = 100) -> list[DeadLetter]:
        """The newest records first: from the directory (all processes of this home), else from memory."""
        if self.directory is None or not self.directory.is_dir():
            return list(reversed(self._memory))[:limit]
        found: list[DeadLetter] = []
        for path in sorted(self.directory.glob(f"*{SUFFIX}"), reverse=True)[:limit]:
            try:
                raw = json.loads(path.read_text(encoding="ascii"))["record"]
                found.append(DeadLetter(**raw))
            except (OSError, ValueError, TypeError, KeyError):
                continue  # a torn or foreign file is not a dead letter
        unstored = [r for r in self._memory if not r.stored]
        return sorted(found + unstored, key=lambda r: r.at, reverse=True)[:limit]

    def count(self) -> int:
        if self.directory is None or not self.directory.is_dir():
            return len(self._memory)
        return sum(1 for _ in self.directory.glob(f"*{SUFFIX}")) + sum(1 for r in self._memory if not r.stored)


__all__ = ["DeadLetter", "DeadLetterBox", "Stage"]
