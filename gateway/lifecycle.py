"""Parts started in order and stopped in reverse: the lifecycle of the gateway and of `chorus run`.

Owns `Lifecycle` (an `AsyncExitStack` of parts: `start` enters each part's
context in order and, when one fails, unwinds those already started; `stop`
exits them in reverse), `Part`, the helpers that pair a start with its
cleanup (`opened`, `started`, `on_stop`), and `ShutdownErrors`, which lets a
part that fails to close be logged while the others still close. Adding a
part is one line in the owner's list of parts. Knows nothing of what a part is.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

import structlog

log = structlog.get_logger(__name__)

Part = Callable[[], AbstractAsyncContextManager[object]]


class ShutdownErrors:
    """Errors raised while closing parts: each part still closes, and every failure is logged once at the end."""

    def __init__(self) -> None:
        self.failures: list[tuple[str, BaseException]] = []

    async def run(self, what: str, close: Callable[[], Awaitable[None]]) -> None:
        try:
            await close()
        except Exception as exc:  # noqa: BLE001 - one part failing to close must not keep the others open
            self.failures.append((what, exc))

    def log(self) -> None:
        failures, self.failures = self.failures, []
        for what, exc in failures:
            log.error("gateway.stop_failed", part=what, error=type(exc).__name__, detail=str(exc)[:200])


class Lifecycle:
    """Runs a list of parts: started in order, stopped in reverse; repeatable (start → stop → start)."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._stack: AsyncExitStack | None = None

    @property
    def running(self) -> bool:
        return self._stack is not None

    async def start(self, parts: Iterable[Part]) -> None:
        """Enter each part in order; a part that fails to start stops the ones before it, and the error is raised.

        Raises:
            RuntimeError: already started.
        """
        if self._stack is not None:
            raise RuntimeError(f"{self._owner} is already running; call stop() first")
        stack = AsyncExitStack()
        try:
            for part in parts:
                await stack.enter_async_context(part())
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack

    async def stop(self) -> None:
        """Exit the started parts in reverse (a no-op when not started)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()


@asynccontextmanager
async def opened(open_: Callable[[], None], close: Callable[[], None], *, in_thread: bool = True) -> AsyncIterator[None]:
    """A blocking open/close pair (a store), each run in a worker thread (`in_thread=False`: quick, on the loop)."""
    if in_thread:
        await asyncio.to_thread(open_)
    else:
        open_()
    try:
        yield
    finally:
        if in_thread:
            await asyncio.to_thread(close)
        else:
            close()


@asynccontextmanager
async def started(
    start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]], *,
    errors: ShutdownErrors | None = None, what: str = "",
) -> AsyncIterator[None]:
    """An async start/stop pair; with `errors`, a failing stop is collected there instead of raised."""
    await start()
    try:
        yield
    finally:
        if errors is None:
            await stop()
        else:
            await errors.run(what, stop)


@asynccontextmanager
async def on_stop(cleanup: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
    """A part with nothing to start, only something to do when the parts after it have stopped."""
    try:
        yield
    finally:
        await cleanup()


__all__ = ["Lifecycle", "Part", "ShutdownErrors", "on_stop", "opened", "started"]
