"""Discord's command menu: the gateway's commands as global slash commands, and their interactions as text.

Owns `menu_payload` (what `PUT /applications/{id}/commands` is sent: one
chat-input command per gateway command, with one optional free-text `args`
option) and `interaction_text` / `interaction_inbound`: a slash command the
user picks from the menu becomes the same `/name args` text a typed command
is, addressed to the bot, so the gateway handles both alike. Pure; knows
nothing of sessions.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import discord

from adapters.base import BotCommand, Choice, InboundMessage

from ._endpoints import PLATFORM

ARGS_OPTION = "args"
MAX_DESCRIPTION = 100  # Discord's limit for command and option descriptions
MAX_CUSTOM_ID = 100  # Discord's limit for a component's custom_id
CHAT_INPUT = 1
STRING_OPTION = 3


# Discord's locale names for the languages a command may be translated into (its `description_localizations`)
DISCORD_LOCALES = {"zh": ("zh-CN",), "es": ("es-ES", "es-419"), "de": ("de",), "fr": ("fr",), "ja": ("ja",),
                   "ru": ("ru",), "pt": ("pt-BR",)}


def _localizations(command: BotCommand) -> dict[str, str]:
    return {locale: description[:MAX_DESCRIPTION] for language, description in command.translations
            for locale in DISCORD_LOCALES.get(language, ())}


def menu_payload(commands: tuple[BotCommand, ...]) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "description": c.description[:MAX_DESCRIPTION], "type": CHAT_INPUT,
         "description_localizations": _localizations(c),
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


def press_text(interaction: discord.Interaction) -> str | None:
    """The command a button press carries (its `custom_id`; None: not a press on a button of ours)."""
    if interaction.type is not discord.InteractionType.component or not interaction.data:
        return None
    custom_id = dict(interaction.data).get("custom_id")
    return custom_id if isinstance(custom_id, str) and custom_id.startswith("/") else None


def choices_view(choices: Sequence[Choice]) -> discord.ui.View:
    """One row of buttons whose `custom_id` is the command a press sends back (answered in `on_interaction`)."""
    view = discord.ui.View(timeout=None)
    for choice in choices:
        if len(choice.command) > MAX_CUSTOM_ID:
            raise ValueError(f"a button's command is over {MAX_CUSTOM_ID} characters: {choice.command[:20]!r}…")
        view.add_item(discord.ui.Button(label=choice.label, custom_id=choice.command))
    return view


def interaction_inbound(interaction: discord.Interaction, text: str, *, parent_id: str | None,
                        press: bool = False) -> InboundMessage:
    """The interaction as an inbound message; in a thread the chat is the parent channel, as for messages.

    A button press carries `interaction` (its id), so the gateway can answer the presser alone.
    """
    channel_id = str(interaction.channel_id)
    user = interaction.user
    return InboundMessage(
        platform=PLATFORM,
        chat_id=parent_id or channel_id,
        chat_type="group" if interaction.guild_id is not None else "dm",
        user_id=str(user.id),
        user_name=user.display_name,
        user_handle=user.name,
        text=text,
        message_id=str(interaction.id),
        timestamp=interaction.created_at.timestamp(),
        thread_id=channel_id if parent_id else None,
        mentions_bot=True,
        delivery_id=f"{PLATFORM}:interaction:{interaction.id}",
        interaction=str(interaction.id) if press else None,
        language=str(interaction.locale) if getattr(interaction, "locale", None) else None,
    )


__all__ = ["choices_view", "interaction_inbound", "interaction_text", "menu_payload", "press_text"]
