"""The `--chat` argument of the CLI: a chat as the gateway scopes it, `PLATFORM:CHAT_ID`, or a clear refusal.

Owns `scoped_chat`. Notes, sessions and search are keyed by the scoped id
(`telegram:-100123`), so a bare id (`streamtest`) would write notes the
gateway never reads or find no sessions; it is refused with the platforms and
an example instead.
"""
from __future__ import annotations

PLATFORMS = ("console", "discord", "slack", "telegram", "web")
CHAT_HELP = "the chat as the gateway scopes it: PLATFORM:CHAT_ID, e.g. telegram:-100123456 or web:3f2a9c…"


def scoped_chat(value: str) -> str:
    """`value` when it is `PLATFORM:CHAT_ID` with a known platform.

    Raises:
        ValueError: the one-line reason, with the platforms and an example.
    """
    if not value:
        raise ValueError("chat id must not be empty")
    platform, sep, chat = value.partition(":")
    if not sep or platform not in PLATFORMS or not chat:
        raise ValueError(
            f"{value!r} is not a scoped chat id; give PLATFORM:CHAT_ID with PLATFORM one of {', '.join(PLATFORMS)} "
            f"(e.g. web:{value if not sep else 'a1b2c3'} or telegram:-100123456)"
        )
    return value


__all__ = ["CHAT_HELP", "PLATFORMS", "scoped_chat"]
