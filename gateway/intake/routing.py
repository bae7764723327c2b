"""Session routing: which conversation an inbound message belongs to.

Owns the session key format of docs/design.md §2.2, built in ONE function
(`session_key`): `agent:<profile>:<platform>:<dm|group|thread>:<chat_id>[:<thread_id>][:<user_id>]`.
Knows nothing of triggers, allowlists or agents.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias
from urllib.parse import quote

from adapters.base import ChatTarget, InboundMessage

SessionKind: TypeAlias = Literal["dm", "group", "thread"]
KEY_PREFIX = "agent"


@dataclass(frozen=True, slots=True)
class Route:
    """Where a message goes: its session key and whether that session is shared by several people."""

    key: str
    kind: SessionKind
    shared: bool
    target: ChatTarget
    reason: str

    @property
    def chat_scope(self) -> str:
        """The chat's id across platforms: what memory, the store and search are scoped by."""
        return chat_scope(self.target.platform, self.target.chat_id)


def chat_scope(platform: str, chat_id: str) -> str:
    """`<platform>:<chat_id>`: chat ids of two platforms never collide."""
    return f"{platform}:{chat_id}"


_SAFE = "@.-_+!~*'()=#$&,;"
# Exactly what `quote` leaves as it is (ASCII letters, digits and `_SAFE`): such an id is its own key part.
_UNQUOTED = re.compile(r"[A-Za-z0-9" + re.escape(_SAFE) + r"]*")


def _part(value: str) -> str:
    # Colons separate the key's fields; any in an id are escaped so keys stay unambiguous.
    if _UNQUOTED.fullmatch(value) is not None:
        return value  # most ids: no `quote` call per message
    return quote(value, safe=_SAFE)


def session_key(
    *, profile: str, platform: str, kind: SessionKind, chat_id: str, thread_id: str | None, user_id: str | None
) -> str:
    """The one place a session key is built."""
    parts = [KEY_PREFIX, _part(profile), _part(platform), kind, _part(chat_id)]
    if thread_id is not None:
        parts.append(_part(thread_id))
    if user_id is not None:
        parts.append(_part(user_id))
    return ":".join(parts)


def route(message: InboundMessage, *, profile: str, group_sessions_per_user: bool) -> Route:
    """One session per DM; per group or thread, shared or one per participant."""
    if message.chat_type == "dm":
        key = session_key(
            profile=profile, platform=message.platform, kind="dm", chat_id=message.chat_id, thread_id=None, user_id=None
        )
        return Route(key=key, kind="dm", shared=False, target=message.target, reason="direct message")
    kind: SessionKind = "thread" if message.thread_id is not None else "group"
    per_user = message.user_id if group_sessions_per_user else None
    key = session_key(
        profile=profile,
        platform=message.platform,
        kind=kind,
        chat_id=message.chat_id,
        thread_id=message.thread_id,
        user_id=per_user,
    )
    reason = f"{kind} session" + (" per participant" if per_user else " shared by the chat")
    return Route(key=key, kind=kind, shared=per_user is None, target=message.target, reason=reason)


__all__ = ["KEY_PREFIX", "Route", "SessionKind", "chat_scope", "route", "session_key"]
