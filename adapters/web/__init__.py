"""The web chat: a page and a websocket served by aiohttp (the embedded default channel), behind `WebAccess`."""
from __future__ import annotations

from adapters.web._access import SESSION_COOKIE, WebAccess, normalized_origin
from adapters.web._transcript import STREAM_CURSOR, TranscriptLine, TranscriptSource
from adapters.web.adapter import WEB_LIMITS, WebAdapter

__all__ = ["SESSION_COOKIE", "STREAM_CURSOR", "WEB_LIMITS", "TranscriptLine", "TranscriptSource", "WebAccess",
           "WebAdapter", "normalized_origin"]
