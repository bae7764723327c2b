"""`Supervisor`: a background task that dies is reported down, logged once, and restarted with a doubling backoff."""
from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from gateway.ops.supervise import Supervisor

WAIT = 5.0


async def test_a_dying_task_is_restarted_with_doubling_backoff_until_it_stays_up() -> None:
    """Three deaths: waits 0.5, 1, 2 s (as asked of `sleep`), one task.died line each, then it runs on."""
    waits: list[float] = []
    runs = 0
    settled = asyncio.Event()

    async def no_wait(delay: float) -> None:
        waits.append(delay)

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs <= 3:
            raise ValueError(f"failure {runs}")
        settled.set()
        await asyncio.Event().wait()  # up for good

    supervisor = Supervisor(sleep=no_wait)
    with capture_logs() as logs:
        supervisor.start("flaky", flaky)
        await asyncio.wait_for(settled.wait(), WAIT)
        down_while_running = supervisor.down
        await supervisor.stop()
    died = [(line["task"], line["error"], line["restart_in"]) for line in logs if line["event"] == "task.died"]
    assert died == [("flaky", "ValueError", 0.5), ("flaky", "ValueError", 1.0), ("flaky", "ValueError", 2.0)]
    assert (waits, supervisor.restarts, down_while_running) == ([0.5, 1.0, 2.0], {"flaky": 3}, [])


async def test_a_task_is_down_with_its_reason_until_restarted() -> None:
    """While the backoff runs the task is listed in `down` with its error; after the restart it is not."""
    release = asyncio.Event()
    waiting = asyncio.Event()
    started = asyncio.Event()
    calls = 0

    async def held(_delay: float) -> None:
        waiting.set()
        await release.wait()

    async def once_broken() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise KeyError("x")
        started.set()
        await asyncio.Event().wait()

    supervisor = Supervisor(sleep=held, max_backoff=0.5)
    supervisor.start("worker", once_broken)
    await asyncio.wait_for(waiting.wait(), WAIT)
    reasons = [down.reason for down in supervisor.down]
    release.set()
    await asyncio.wait_for(started.wait(), WAIT)
    assert reasons == ["background task worker died (KeyError); restart 1 in 0.5 s"]
    assert supervisor.down == []
    await supervisor.stop()


async def test_a_long_lived_task_restarts_from_the_initial_backoff() -> None:
    """A task that ran past `stable_after` before dying waits the initial delay again, not a doubled one."""
    now = [0.0]
    waits: list[float] = []
    done = asyncio.Event()
    runs = 0

    async def record(delay: float) -> None:
        waits.append(delay)

    async def dies_after_a_while() -> None:
        nonlocal runs
        runs += 1
        if runs == 3:
            done.set()
            await asyncio.Event().wait()
        now[0] += 100.0 if runs == 2 else 1.0  # the second run lived 100 s
        raise OSError("gone")

    supervisor = Supervisor(sleep=record, clock=lambda: now[0], stable_after=60.0)
    supervisor.start("long", dies_after_a_while)
    await asyncio.wait_for(done.wait(), WAIT)
    await supervisor.stop()
    assert waits == [0.5, 0.5]
