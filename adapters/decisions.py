"""Inbound decisions shared by the platform adapters, and their bounded de-duplication memory.

Owns `Accepted` / `Ignored` (what an adapter's pure `classify` step returns:
a message for the gateway, or the reason it was dropped) and `RecentKeys`.
Knows nothing of any platform's wire format.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal, TypeAlias

from adapters.base import InboundMessage


@dataclass(frozen=True, slots=True)
class Accepted:
    """The event is a message for the gateway."""

    message: InboundMessage
    kind: Literal["accepted"] = "accepted"


@dataclass(frozen=True, slots=True)
class Ignored:
    """The event is dropped; `reason` says why (it is logged)."""

    reason: str
    kind: Literal["ignored"] = "ignored"


Decision: TypeAlias = Accepted | Ignored


class RecentKeys:
    """A bounded set remembering the most recent `capacity` keys (oldest forgotten first)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._capacity = capacity
        self._keys: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: str) -> bool:
        """Remember `key`; returns False if it was already there (a duplicate)."""
        if key in self._keys:
            self._keys.move_to_end(key)
            return False
        self._keys[key] = None
        if len(self._keys) > self._capacity:
            self._keys.popitem(last=False)
        return True
