"""An `InboundMessage` as JSON text for a database row, and back."""
from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from adapters.base import Attachment, InboundMessage, Quote

_FIELDS = tuple(f.name for f in fields(InboundMessage) if f.name not in ("attachments", "kind", "quote"))


def encode_message(message: InboundMessage) -> str:
    """JSON text; a lone surrogate (which PostgreSQL text cannot hold) is escaped, and loads back the same."""
    data: dict[str, Any] = {name: getattr(message, name) for name in _FIELDS}
    data["attachments"] = [asdict(item) for item in message.attachments]
    if message.quote is not None:
        data["quote"] = asdict(message.quote)
    return json.dumps(data, ensure_ascii=True)


def decode_message(raw: str) -> InboundMessage:
    """Raises ValueError, TypeError or KeyError when the text is not an encoded message."""
    data: dict[str, Any] = json.loads(raw)
    data["attachments"] = tuple(Attachment(**item) for item in data.get("attachments") or ())
    quote = data.get("quote")
    data["quote"] = Quote(**quote) if quote else None
    return InboundMessage(**{name: data[name] for name in (*_FIELDS, "attachments", "quote") if name in data})
