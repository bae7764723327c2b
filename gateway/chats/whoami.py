"""`/whoami`: the sender's platform id and whether they are a bot admin here (for allowlists and admins).

Owns the answer's text, a pure function of the message and the chat's admins. Knows nothing of sessions.
"""
from __future__ import annotations

from collections.abc import Container

from adapters.base import InboundMessage


def whoami_text(message: InboundMessage, *, admins: Container[str]) -> str:
    """One short answer: name, platform id, admin or not, and the line to paste into an allowlist."""
    admin = "you are an admin here" if message.user_id in admins else "you are not an admin here"
    return (
        f"{message.user_name}: {message.platform} id {message.user_id} ({admin}). "
        f'For the config: allowed_users: ["{message.user_id}"]'
    )


__all__ = ["whoami_text"]
