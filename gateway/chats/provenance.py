"""Provenance of a turn's writes: is the sender trusted to shape this chat's durable notes?

Owns `writer_standing`. In a group, only the platform's admins (`platforms.<p>.admins`) write notes
directly; anyone else's writes carry the origin "group_member" and follow `memory.untrusted_writes`
(stage by default). An empty admin list trusts nobody in groups: anyone in a group can ask the bot to
remember something, so the safe reading of "no admins configured" is "no one is an admin".
Direct messages are the owner's own (the allowlist admitted them). The agent loop adds the second
origin, "tool_output", on its own. Knows nothing of notes.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from adapters.base import InboundMessage
from agent.loop import TOOL_OUTPUT, TRUSTED_OUTPUT_TOOLS
from agent.messages import Message
from gateway.config import PlatformsSettings

GROUP_MEMBER: Final = "group_member"


def writer_standing(message: InboundMessage, admins: Mapping[str, frozenset[str]]) -> str | None:
    """None when the sender's writes are trusted, else the untrusted origin to record."""
    if message.chat_type != "group":
        return None
    if message.user_id in admins.get(message.platform, frozenset()):
        return None
    return GROUP_MEMBER


def admins_by_platform(platforms: PlatformsSettings) -> dict[str, frozenset[str]]:
    """`platforms.<p>.admins` of the platforms that have groups."""
    return {"telegram": frozenset(platforms.telegram.admins), "discord": frozenset(platforms.discord.admins),
            "slack": frozenset(platforms.slack.admins)}


def turn_origin(message: InboundMessage, admins: Mapping[str, frozenset[str]],
                new_messages: tuple[Message, ...]) -> str | None:
    """The origin of writes made from a finished turn (background review): the sender's standing, then tool output."""
    standing = writer_standing(message, admins)
    if standing is not None:
        return standing
    read_tools = any(item.role == "tool" and item.name not in TRUSTED_OUTPUT_TOOLS for item in new_messages)
    return TOOL_OUTPUT if read_tools else None


__all__ = ["GROUP_MEMBER", "admins_by_platform", "turn_origin", "writer_standing"]
