"""Busy input rules: which mode a session's lane runs in, and the timers `collect` waits on.

Owns `BusyRules` (per chat `chats."…".busy_input_mode`, else `gateway.busy_input_mode`, both live;
`gateway.collect_seconds`), and the `Timers` Protocol with its asyncio implementation `LoopTimers`. Modes
(carried out by `SessionLanes`):

- `queue`: jobs run in arrival order (the default).
- `interrupt`: a new message cancels the running turn.
- `collect`: a turn waits `collect_seconds` after its sender's last message; the messages of one sender
  that arrive within that gap are one turn (their texts joined by new lines, in order).
- `steer`: a message arriving while a turn runs tools is handed to that turn at its next tool-result
  boundary (`SessionLanes.take_steerable`); one that no boundary took waits its turn as in `queue`.

Knows nothing of what a job does.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Literal, Protocol, TypeAlias

BusyMode: TypeAlias = Literal["queue", "interrupt", "collect", "steer"]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """Calls a function once after a delay (injected, so tests move time themselves)."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable: ...


class LoopTimers:
    """`Timers` on the running event loop."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable:
        return asyncio.get_running_loop().call_later(delay, callback)


@dataclasses.dataclass(frozen=True, slots=True)
class BusyRules:
    """The busy mode of a session and the collect gap.

    Args:
        mode: the mode for a chat scope (`PLATFORM:CHAT`), as the running config says.
        collect_seconds: the collect gap, as the running config says.
    """

    mode: Callable[[str], BusyMode]
    collect_seconds: Callable[[], float]

    @classmethod
    def fixed(cls, mode: BusyMode, collect_seconds: float = 2.0) -> BusyRules:
        return cls(mode=lambda _chat: mode, collect_seconds=lambda: collect_seconds)


__all__ = ["BusyMode", "BusyRules", "Cancellable", "LoopTimers", "Timers"]
