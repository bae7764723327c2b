"""`/whoami`: the sender's platform id and whether they are a bot admin here (for allowlists and admins).

Owns the answer's text, a pure function of the message and the chat's admins. Knows nothing of sessions.
"""
from __future__ import annotations

from collections.abc import Container

from adapters.base import InboundMessage
from gateway.i18n import Phrase, say


def whoami_text(message: InboundMessage, *, admins: Container[str], language: str) -> Phrase:
    """One short answer: name, platform id, admin or not, and the line to paste into an allowlist."""
    admin = say(language, "whoami.admin" if message.user_id in admins else "whoami.not_admin")
    return say(language, "whoami.answer", name=message.user_name, platform=message.platform,
               user_id=message.user_id, admin=admin)


__all__ = ["whoami_text"]
