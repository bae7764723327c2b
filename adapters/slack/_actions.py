"""Block Kit buttons: a message with them, and a click (`block_actions`) turned into the clicker's message.

Owns `choice_blocks` and `action_inbound`. A button's `value` is its command; a
click arrives from the clicker as that command, addressed to the bot, with
`interaction` set so the gateway answers it privately (chat.postEphemeral). Pure.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.base import Choice, InboundMessage

from ._events import PLATFORM

ACTION_PREFIX = "chorus_choice_"  # action_ids Chorus sets; other apps' actions in the same workspace are not ours
MAX_TEXT_CHARS = 3000  # a section block's text limit


def choice_blocks(text: str, choices: Sequence[Choice]) -> list[dict[str, Any]]:
    """A section with `text` (plain, never parsed as mrkdwn) and one actions row of buttons."""
    buttons = [
        {"type": "button", "action_id": f"{ACTION_PREFIX}{index}", "value": choice.command,
         "text": {"type": "plain_text", "text": choice.label, "emoji": True}}
        for index, choice in enumerate(choices)
    ]
    return [{"type": "section", "text": {"type": "plain_text", "text": text[:MAX_TEXT_CHARS], "emoji": True}},
            {"type": "actions", "elements": buttons}]


def action_inbound(body: Mapping[str, Any], *, received_at: float | None = None) -> InboundMessage | None:
    """The click as the clicker's own message (None: not a Chorus button, or no channel or user)."""
    actions = body.get("actions") or []
    action = actions[0] if actions and isinstance(actions[0], Mapping) else {}
    value, action_id = action.get("value"), str(action.get("action_id") or "")
    user = body.get("user") or {}
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
    if not action_id.startswith(ACTION_PREFIX) or not isinstance(value, str) or not value.startswith("/"):
        return None
    if not isinstance(channel, str) or not isinstance(user.get("id"), str):
        return None
    container = body.get("container") or {}
    thread = container.get("thread_ts") or (body.get("message") or {}).get("thread_ts")
    clicked = received_at if received_at is not None else time.time()
    trigger = str(body.get("trigger_id") or f"{channel}:{clicked}")
    return InboundMessage(
        platform=PLATFORM,
        chat_id=channel,
        chat_type="dm" if channel.startswith("D") else "group",
        user_id=user["id"],
        user_name=str(user.get("name") or user.get("username") or user["id"]),
        text=value,
        message_id=f"action:{trigger}",
        timestamp=clicked,
        thread_id=str(thread) if thread else None,
        mentions_bot=True,
        delivery_id=f"{PLATFORM}:action:{trigger}",
        interaction=trigger,
    )


__all__ = ["ACTION_PREFIX", "action_inbound", "choice_blocks"]
