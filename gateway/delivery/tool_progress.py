"""Tool progress in the channel (`tool_progress.dms` / `.groups`: off | new | all).

Owns `ToolProgress`, the per-turn sink the loop tells of each tool call as it
starts, and `describe_call`, the short line it shows: the tool and a summary
of its arguments, with any argument named like a key, token, secret or
password masked. One notice per turn is sent and then edited (through the
same per-chat edit throttle as streaming replies). `new` shows a call only
when its tool differs from the one shown last; `all` shows every call.
Knows nothing of agents beyond the `ToolCall` value.
"""
from __future__ import annotations

import json
import re
from typing import Literal, Protocol

from agent.messages import ToolCall

ProgressMode = Literal["off", "new", "all"]
SUMMARY_CHARS = 120
VALUE_CHARS = 40
MASK = "***"
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|auth(?!or\b)|credential|cookie|bearer", re.I)


class ProgressChannel(Protocol):
    """Sends and (throttled) edits one notice in the turn's chat."""

    async def send_progress(self, text: str) -> object: ...

    async def edit_progress(self, handle: object, text: str) -> None: ...


def _masked(value: object, depth: int = 0) -> object:
    if isinstance(value, dict):
        return {k: MASK if _SECRET_NAME.search(str(k)) else _masked(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list) and depth < 3:
        return [_masked(item, depth + 1) for item in value]
    return value


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def describe_call(call: ToolCall) -> str:
    """`🔧 server__tool(query="…", api_key=***)`: the tool and a short, masked argument summary."""
    try:
        parsed = json.loads(call.arguments or "{}")
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        masked = _masked(parsed)
        assert isinstance(masked, dict)
        shown = ", ".join(f"{key}={_short(value)}" for key, value in masked.items())
    else:
        shown = "…"
    if len(shown) > SUMMARY_CHARS:
        shown = shown[: SUMMARY_CHARS - 1] + "…"
    return f"🔧 {call.name}({shown})"


class ToolProgress:
    """A turn's tool-progress notice.

    Args:
        channel: where the notice goes.
        mode: `new` (a call whose tool differs from the last shown) or `all`.
    """

    def __init__(self, channel: ProgressChannel, *, mode: ProgressMode) -> None:
        self._channel = channel
        self._mode = mode
        self._handle: object | None = None
        self._last_tool: str | None = None
        self.shown: list[str] = []

    async def __call__(self, call: ToolCall) -> None:
        if self._mode == "off" or (self._mode == "new" and call.name == self._last_tool):
            return
        self._last_tool = call.name
        text = describe_call(call)
        self.shown.append(text)
        if self._handle is None:
            self._handle = await self._channel.send_progress(text)
        else:
            await self._channel.edit_progress(self._handle, text)


__all__ = ["ProgressChannel", "ProgressMode", "ToolProgress", "describe_call"]
