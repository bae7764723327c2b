"""Edited messages (`gateway.edits: follow`): what an edit does to the turn of the message it edits.

Owns `RecentTexts` (the texts of recent messages by platform, chat and message
id, so an edit whose platform does not say the earlier text still can) and
`merge_edit` (the queued message with the edit's text). The rule: while the
message's turn has not started, the edit replaces its queued text (one turn,
the new text); once it started or finished, the edit is a turn (or an
observed line) of its own, marked `[edited]` with the earlier text
(`gateway.sessions.lines`). Knows nothing of agents.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict

from adapters.base import InboundMessage

MAX_REMEMBERED = 4_096


def text_key(message: InboundMessage) -> str:
    return f"{message.platform}:{message.chat_id}:{message.message_id}"


class RecentTexts:
    """The text of the last `capacity` messages this process accepted (oldest forgotten first)."""

    def __init__(self, capacity: int = MAX_REMEMBERED) -> None:
        self._capacity = capacity
        self._texts: OrderedDict[str, str] = OrderedDict()

    def remember(self, message: InboundMessage) -> None:
        key = text_key(message)
        self._texts[key] = message.text
        self._texts.move_to_end(key)
        if len(self._texts) > self._capacity:
            self._texts.popitem(last=False)

    def earlier(self, message: InboundMessage) -> str | None:
        """The text `message` (an edit) had before, if this process saw it."""
        return self._texts.get(text_key(message))


def merge_edit(queued: InboundMessage, edit: InboundMessage) -> InboundMessage:
    """The queued message as its sender edited it: the new text (and quote), still one new message."""
    return dataclasses.replace(queued, text=edit.text, quote=edit.quote or queued.quote,
                               mentions_bot=queued.mentions_bot or edit.mentions_bot)


__all__ = ["RecentTexts", "merge_edit", "text_key"]
