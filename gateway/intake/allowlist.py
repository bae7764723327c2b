"""Allowlists: who may talk to the bot on each platform. Deny by default.

Owns `AccessRules`, `AccessDecision`, `check_access` and `RefusalLimiter` (a
refusal is sent to an unknown sender at most once per interval). The web and
console adapters are local and always allowed. Knows nothing of sessions.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from adapters.base import InboundMessage

LOCAL_PLATFORMS = frozenset({"web", "console"})
REFUSAL_INTERVAL_SECONDS = 3600.0
REFUSAL_MEMORY = 10_000


@dataclass(frozen=True, slots=True)
class AccessRules:
    platform: str
    allowed_users: frozenset[str] = frozenset()
    allowed_chats: frozenset[str] = frozenset()
    allow_all_users: bool = False
    local: bool = False

    @classmethod
    def of(
        cls,
        platform: str,
        *,
        allowed_users: Iterable[str] = (),
        allowed_chats: Iterable[str] = (),
        allow_all_users: bool = False,
    ) -> AccessRules:
        return cls(
            platform=platform,
            allowed_users=frozenset(str(u).lstrip("@").lower() for u in allowed_users),
            allowed_chats=frozenset(str(c) for c in allowed_chats),
            allow_all_users=allow_all_users,
            local=platform in LOCAL_PLATFORMS,
        )


@dataclass(frozen=True, slots=True)
class AccessDecision:
    allowed: bool
    reason: str


def check_access(message: InboundMessage, rules: AccessRules | None) -> AccessDecision:
    """Allowed if local, open to all, or the user (id, or unique handle such as a Telegram @username) or the chat
    is listed. A display name is never matched: any sender can take "alice" as theirs."""
    if rules is None:
        return AccessDecision(False, f"platform {message.platform} has no access rules (deny by default)")
    if rules.local:
        return AccessDecision(True, "local channel")
    if rules.allow_all_users:
        return AccessDecision(True, "allow_all_users")
    if message.user_id.lower() in rules.allowed_users:
        return AccessDecision(True, "user id in allowed_users")
    if message.user_handle and message.user_handle.lstrip("@").lower() in rules.allowed_users:
        return AccessDecision(True, "user handle in allowed_users")  # never the display name: anyone can set that
    if message.chat_id in rules.allowed_chats:
        return AccessDecision(True, "chat in allowed_chats")
    return AccessDecision(False, "sender not in allowed_users and chat not in allowed_chats")


class RefusalLimiter:
    """Remembers when each unknown sender was last refused (bounded memory)."""

    def __init__(
        self, *, interval: float = REFUSAL_INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval = interval
        self._clock = clock
        self._last: OrderedDict[tuple[str, str], float] = OrderedDict()

    def should_refuse(self, platform: str, user_id: str) -> bool:
        """True the first time, then again only after the interval."""
        now = self._clock()
        key = (platform, user_id)
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            return False
        self._last[key] = now
        self._last.move_to_end(key)
        while len(self._last) > REFUSAL_MEMORY:
            self._last.popitem(last=False)
        return True


__all__ = [
    "LOCAL_PLATFORMS",
    "AccessDecision",
    "AccessRules",
    "RefusalLimiter",
    "check_access",
]
