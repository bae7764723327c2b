"""Slack slash commands: a `/name text` payload turned into the same `/name args` message a typed command is.

Owns `command_inbound`. Slack declares slash commands in the app's
configuration (a manifest's `features.slash_commands`); the adapter listens
for the names it is given and hands each invocation on addressed to the bot,
so the gateway handles picked and typed commands alike. Pure; knows nothing
of sessions.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.base import InboundMessage

from ._events import PLATFORM


def command_inbound(payload: Mapping[str, Any], *, received_at: float) -> InboundMessage | None:
    """The invocation as an inbound message (None: a payload without channel, user or command)."""
    command, channel, user = payload.get("command"), payload.get("channel_id"), payload.get("user_id")
    if not isinstance(command, str) or not isinstance(channel, str) or not isinstance(user, str):
        return None
    text = f"{command} {payload.get('text') or ''}".strip()
    dm = payload.get("channel_name") == "directmessage" or channel.startswith("D")
    trigger = str(payload.get("trigger_id") or f"{channel}:{received_at}")
    return InboundMessage(
        platform=PLATFORM,
        chat_id=channel,
        chat_type="dm" if dm else "group",
        user_id=user,
        user_name=str(payload.get("user_name") or user),
        text=text,
        message_id=trigger,
        timestamp=received_at,
        mentions_bot=True,
        delivery_id=f"{PLATFORM}:command:{trigger}",
    )


__all__ = ["command_inbound"]
