"""The local web chat: a page and a websocket served by aiohttp (the embedded default channel)."""
from __future__ import annotations

from adapters.web.adapter import WEB_LIMITS, WebAdapter

__all__ = ["WEB_LIMITS", "WebAdapter"]
