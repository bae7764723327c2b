"""Which language a message is answered in.

`chats."PLATFORM:CHAT".language` when set; else, with `gateway.language: auto`,
the sender's own language as their platform reported it; else
`gateway.language` when it names a language; else English. A language with no
catalogue counts as unknown, so its chat is answered in English.
"""
from __future__ import annotations

from gateway.config import ChorusConfig
from gateway.i18n.texts import DEFAULT_LANGUAGE, LANGUAGES

AUTO = "auto"


def sender_language(code: str | None) -> str | None:
    """A platform's language tag (`zh-hans`, `pt_BR`, `de`) as one of `LANGUAGES`; None: unknown or none."""
    if not code:
        return None
    primary = code.replace("_", "-").split("-", 1)[0].strip().lower()
    return primary if primary in LANGUAGES else None


def language_for(config: ChorusConfig | None, chat_scope: str, sender: str | None) -> str:
    """The language of the gateway's own texts to this chat (`sender`: the platform's tag for the sender)."""
    if config is None:
        return sender_language(sender) or DEFAULT_LANGUAGE
    chat = config.chats.get(chat_scope)
    chosen = chat.language if chat is not None and chat.language else config.gateway.language
    if chosen == AUTO:
        return sender_language(sender) or DEFAULT_LANGUAGE
    return sender_language(chosen) or DEFAULT_LANGUAGE


__all__ = ["AUTO", "language_for", "sender_language"]
