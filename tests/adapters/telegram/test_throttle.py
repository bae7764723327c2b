"""EditThrottle with an injected clock: spacing per chat, merging of superseded edits."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from adapters.telegram._throttle import EditThrottle


class FakeClock:
    """Time that moves only when something sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds
        await asyncio.sleep(0)


def _recorder(log: list[str], text: str) -> Callable[[], Awaitable[None]]:
    async def deliver() -> None:
        log.append(text)
    return deliver


async def test_burst_of_edits_delivers_first_and_last() -> None:
    """Five edits of one message at once: the first goes now, the last after one interval, the rest are dropped."""
    clock, delivered = FakeClock(), list[str]()
    throttle = EditThrottle(interval=1.0, clock=clock, sleep=clock.sleep)
    results = await asyncio.gather(*(throttle.submit("c", "m", _recorder(delivered, f"v{i}")) for i in range(5)))
    assert (delivered, results, clock.sleeps) == (["v0", "v4"], [True, False, False, False, True], [1.0])


async def test_edits_spaced_by_the_interval_are_not_delayed() -> None:
    """An edit arriving after the interval has passed goes out without waiting."""
    clock, delivered = FakeClock(), list[str]()
    throttle = EditThrottle(interval=1.0, clock=clock, sleep=clock.sleep)
    await throttle.submit("c", "m", _recorder(delivered, "a"))
    clock.now += 1.5
    await throttle.submit("c", "m", _recorder(delivered, "b"))
    assert (delivered, clock.sleeps) == (["a", "b"], [])


async def test_chats_are_throttled_independently_and_messages_are_not_merged() -> None:
    """Another chat is not held back; two messages in one chat are both delivered, one interval apart."""
    clock, delivered = FakeClock(), list[str]()
    throttle = EditThrottle(interval=1.0, clock=clock, sleep=clock.sleep)
    await throttle.submit("c1", "m1", _recorder(delivered, "c1m1"))
    await throttle.submit("c2", "m1", _recorder(delivered, "c2m1"))
    await throttle.submit("c1", "m2", _recorder(delivered, "c1m2"))
    assert (delivered, clock.sleeps) == (["c1m1", "c2m1", "c1m2"], [1.0])


async def test_delivery_errors_reach_the_caller_and_the_next_edit_still_goes() -> None:
    """A failing edit raises to its caller; the throttle stays usable."""
    clock, delivered = FakeClock(), list[str]()
    throttle = EditThrottle(interval=1.0, clock=clock, sleep=clock.sleep)

    async def boom() -> None:
        raise RuntimeError("edit failed")

    with pytest.raises(RuntimeError, match="edit failed"):
        await throttle.submit("c", "m", boom)
    assert await throttle.submit("c", "m", _recorder(delivered, "after")) is True
    assert delivered == ["after"]
