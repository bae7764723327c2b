"""The inbound journal: accepted messages whose turn has not finished yet, on disk under `home`.

Owns `InboundJournal`. An accepted message is written here before its turn is
queued and removed once its reply is recorded in the outbox (or the turn
failed and the chat was told). After a SIGTERM past the grace period or a
crash, `recover` hands the unfinished messages back so the restarted gateway
re-runs them: nothing accepted is lost. Recovery claims each file by an atomic
rename, so two processes sharing a home never replay one message twice.
Knows nothing of sessions or agents.
"""
from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import structlog

from adapters.base import Attachment, InboundMessage

log = structlog.get_logger(__name__)

SUFFIX = ".json"
_FIELDS = tuple(name for name in InboundMessage.__dataclass_fields__ if name not in ("attachments", "kind"))
CLAIMED = ".claimed"


def _to_json(message: InboundMessage) -> str:
    fields = {name: getattr(message, name) for name in _FIELDS}
    fields["attachments"] = [asdict(item) for item in message.attachments]
    return json.dumps(fields, ensure_ascii=False)


def _from_json(raw: str) -> InboundMessage:
    data: dict[str, Any] = json.loads(raw)
    data.pop("kind", None)
    data["attachments"] = tuple(Attachment(**item) for item in data.get("attachments") or ())
    return InboundMessage(**data)


class InboundJournal:
    """One file per unfinished message in `directory`.

    Args:
        directory: normally `<home>/inflight`; created on first write.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def record(self, message: InboundMessage) -> str:
        """Write `message` atomically; returns the entry id for `done`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        entry = f"{message.timestamp:020.6f}-{uuid.uuid4().hex}"
        temp = self.directory / f".{entry}.tmp"
        temp.write_text(_to_json(message), encoding="utf-8")
        os.replace(temp, self.directory / f"{entry}{SUFFIX}")
        return entry

    def done(self, entry: str) -> None:
        """Forget an entry (its reply is in the outbox, or the chat was told of a failure)."""
        for name in (f"{entry}{SUFFIX}", f"{entry}{SUFFIX}{CLAIMED}"):
            try:
                (self.directory / name).unlink()
            except FileNotFoundError:
                continue

    def recover(self) -> list[tuple[str, InboundMessage]]:
        """Claim and return every unfinished message, oldest first."""
        if not self.directory.is_dir():
            return []
        found: list[tuple[str, InboundMessage]] = []
        for path in sorted(self.directory.glob(f"*{SUFFIX}")):
            claimed = path.with_name(path.name + CLAIMED)
            try:
                os.rename(path, claimed)  # atomic: another process recovering the same home loses the race
            except FileNotFoundError:
                continue
            try:
                found.append((path.name[: -len(SUFFIX)], _from_json(claimed.read_text(encoding="utf-8"))))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning("journal.unreadable", entry=path.name, error=type(exc).__name__)
                claimed.rename(path.with_name(path.name + ".bad"))
        return found

    def pending_count(self) -> int:
        return len(list(self.directory.glob(f"*{SUFFIX}*"))) if self.directory.is_dir() else 0


__all__ = ["InboundJournal"]
