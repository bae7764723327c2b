"""An `InboundMessage` as JSON text for a database row, and back."""
from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from adapters.base import Attachment, InboundMessage, Quote

# `traceparent` is a column of its own (`chorus_inbound.traceparent`), not part of the message's JSON.
_FIELDS = tuple(
    f.name for f in fields(InboundMessage) if f.name not in ("attachments", "kind", "quote", "traceparent")
)


def encode_message(message: InboundMessage) -> str:
    """JSON text (without the trace context); a lone surrogate (which PostgreSQL text cannot hold) is escaped."""
    data: dict[str, Any] = {name: getattr(message, name) for name in _FIELDS}
    data["attachments"] = [asdict(item) for item in message.attachments]
    if message.quote is not None:
        data["quote"] = asdict(message.quote)
    return json.dumps(data, ensure_ascii=True)


def decode_message(raw: str, traceparent: str | None = None) -> InboundMessage:
    """Raises ValueError, TypeError or KeyError when the text is not an encoded message."""
    data: dict[str, Any] = json.loads(raw)
    data["attachments"] = tuple(Attachment(**item) for item in data.get("attachments") or ())
    quote = data.get("quote")
    data["quote"] = Quote(**quote) if quote else None
    known = {name: data[name] for name in (*_FIELDS, "attachments", "quote") if name in data}
    return InboundMessage(**known, traceparent=traceparent)
