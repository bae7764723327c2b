"""Discord's command menu: the gateway's commands as global slash commands, and their interactions as text.

Owns `menu_payload` (what `PUT /applications/{id}/commands` is sent: one
chat-input command per gateway command, with one optional free-text `args`
option) and `interaction_text` / `interaction_inbound`: a slash command the
user picks from the menu becomes the same `/name args` text a typed command
is, addressed to the bot, so the gateway handles both alike. Pure; knows
nothing of sessions.
"""
from __future__ import annotations

from typing import Any

import discord

from adapters.base import BotCommand, InboundMessage

from ._endpoints import PLATFORM

ARGS_OPTION = "args"
MAX_DESCRIPTION = 100  # Discord's limit for command and option descriptions
CHAT_INPUT = 1
STRING_OPTION = 3


def menu_payload(commands: tuple[BotCommand, ...]) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "description": c.description[:MAX_DESCRIPTION], "type": CHAT_INPUT,
         "options": [{"name": ARGS_OPTION, "description": "what follows the command", "type": STRING_OPTION,
                      "required": False}]}
        for c in commands
    ]


def interaction_text(interaction: discord.Interaction) -> str | None:
    """`/name args` for a slash command interaction (None: another kind of interaction)."""
    if interaction.type is not discord.InteractionType.application_command or not interaction.data:
        return None
    data: dict[str, Any] = dict(interaction.data)
    name = data.get("name")
    if not isinstance(name, str):
        return None
    args = next((str(o.get("value", "")) for o in data.get("options") or () if o.get("name") == ARGS_OPTION), "")
    return f"/{name} {args}".strip()


def interaction_inbound(interaction: discord.Interaction, text: str, *, parent_id: str | None) -> InboundMessage:
    """The interaction as an inbound message; in a thread the chat is the parent channel, as for messages."""
    channel_id = str(interaction.channel_id)
    user = interaction.user
    return InboundMessage(
        platform=PLATFORM,
        chat_id=parent_id or channel_id,
        chat_type="group" if interaction.guild_id is not None else "dm",
        user_id=str(user.id),
        user_name=user.display_name,
        text=text,
        message_id=str(interaction.id),
        timestamp=interaction.created_at.timestamp(),
        thread_id=channel_id if parent_id else None,
        mentions_bot=True,
        delivery_id=f"{PLATFORM}:interaction:{interaction.id}",
    )


__all__ = ["menu_payload", "interaction_inbound", "interaction_text"]
