"""One lifecycle: parts start in order and stop in reverse; a part that fails to start stops those before it."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from adapters.base import InboundMessage
from gateway.app import Gateway
from gateway.build import build_gateway
from gateway.lifecycle import Lifecycle, Part, ShutdownErrors, on_stop, started
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config


def _part(name: str, events: list[str], *, fail: bool = False) -> Part:
    @asynccontextmanager
    async def part() -> AsyncIterator[None]:
        if fail:
            raise OSError(f"{name} cannot start")
        events.append(f"start {name}")
        try:
            yield
        finally:
            events.append(f"stop {name}")

    return part


async def test_parts_start_in_order_and_stop_in_reverse_repeatably() -> None:
    events: list[str] = []
    life = Lifecycle("thing")
    parts = [_part("a", events), _part("b", events), _part("c", events)]
    await life.start(parts)
    with pytest.raises(RuntimeError, match="thing is already running; call stop"):
        await life.start(parts)
    await life.stop()
    await life.stop()  # a second stop is a no-op
    await life.start(parts)
    await life.stop()
    assert events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"] * 2


async def test_a_part_that_fails_to_start_stops_the_ones_before_it() -> None:
    events: list[str] = []
    life = Lifecycle("thing")
    with pytest.raises(OSError, match="b cannot start"):
        await life.start([_part("a", events), _part("b", events, fail=True), _part("c", events)])
    assert events == ["start a", "stop a"]
    assert not life.running


async def test_a_part_that_fails_to_stop_is_logged_and_the_others_still_stop() -> None:
    events: list[str] = []
    errors = ShutdownErrors()

    async def nothing() -> None:
        return None

    async def broken() -> None:
        raise ConnectionError("gone")

    def broken_part() -> AbstractAsyncContextManager[object]:
        return started(nothing, broken, errors=errors, what="broken")

    life = Lifecycle("thing")
    await life.start([_part("a", events), broken_part, _part("c", events)])
    await life.stop()
    with capture_logs() as logs:
        errors.log()
    assert events == ["start a", "start c", "stop c", "stop a"]
    assert [(e["event"], e["part"], e["error"]) for e in logs] == [("gateway.stop_failed", "broken", "ConnectionError")]


async def test_on_stop_runs_only_at_stop() -> None:
    events: list[str] = []

    async def note() -> None:
        events.append("cleanup")

    life = Lifecycle("thing")
    await life.start([lambda: on_stop(note), _part("a", events)])
    assert events == ["start a"]
    await life.stop()
    assert events == ["start a", "stop a", "cleanup"]


class FailingPlatform(FakePlatform):
    failing = True

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        if self.failing:
            raise OSError("port in use")
        await super().start(inbound)


async def test_a_gateway_whose_adapter_cannot_start_closes_what_it_opened(fake_openai: FakeOpenAI, home: Path) -> None:
    """The first adapter started is stopped again, the store is closed; a later stop() has nothing left to do."""
    first, second = FakePlatform("first"), FailingPlatform("second")
    gateway: Gateway = build_gateway(make_config(home, fake_openai.base_url), adapters={"first": first, "second": second})
    stopped: list[str] = []
    original = first.stop

    async def stop_first() -> None:
        stopped.append("first")
        await original()

    first.stop = stop_first  # type: ignore[method-assign]
    with pytest.raises(OSError, match="port in use"):
        await gateway.start()
    assert stopped == ["first"]
    readiness = await gateway.readiness()
    assert (readiness.store_open, readiness.adapters_started) == (False, False)
    await gateway.stop()
    second.failing = False
    async with gateway:  # it starts again once the cause is gone
        readiness = await gateway.readiness()
    assert (readiness.store_open, readiness.adapters_started) == (True, True)
    assert stopped == ["first", "first"]
