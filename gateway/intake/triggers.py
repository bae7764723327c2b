"""Trigger rules: whether the bot answers a message, records it as context, or ignores it.

Owns `TriggerDecision` and `decide_trigger`. DMs always trigger; in groups the
bot answers when mentioned, replied to or addressed with a command, per
`gateway.group_trigger` (always | mention | reply) and the platform's
`require_mention`. Knows nothing of sessions or agents.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from adapters.base import InboundMessage
from gateway.commands.spec import Command
from gateway.commands.table import COMMANDS

Action: TypeAlias = Literal["respond", "command", "record", "ignore"]
GroupTrigger: TypeAlias = Literal["always", "mention", "reply"]


@dataclass(frozen=True, slots=True)
class TriggerDecision:
    action: Action
    reason: str
    command: Command | None = None


def observes_unmentioned(*, observe_unmentioned: bool | None, record_unmentioned: bool) -> bool:
    """`gateway.observe_unmentioned`, else its old name `record_unmentioned` (kept working)."""
    return record_unmentioned if observe_unmentioned is None else observe_unmentioned


def decide_trigger(
    message: InboundMessage,
    *,
    group_trigger: GroupTrigger,
    require_mention: bool,
    record_unmentioned: bool,
) -> TriggerDecision:
    """Decide what to do with one allowed message."""
    command = COMMANDS.parse(message.text)
    if command is not None:
        return TriggerDecision(action="command", reason=f"command /{command.name}", command=command)
    if message.chat_type == "dm":
        return TriggerDecision(action="respond", reason="direct message")
    if not require_mention or group_trigger == "always":
        return TriggerDecision(action="respond", reason="group answers every message")
    if message.replies_to_bot:
        return TriggerDecision(action="respond", reason="reply to the bot")
    if group_trigger == "mention" and message.mentions_bot:
        return TriggerDecision(action="respond", reason="bot mentioned")
    if record_unmentioned and (message.text.strip() or message.attachments):  # a photo is context too
        return TriggerDecision(action="record", reason=f"not addressed ({group_trigger} mode); kept as context")
    return TriggerDecision(action="ignore", reason=f"not addressed ({group_trigger} mode)")


__all__ = ["Action", "GroupTrigger", "TriggerDecision", "decide_trigger", "observes_unmentioned"]
