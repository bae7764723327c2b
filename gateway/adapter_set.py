"""The platforms' adapters of one gateway while it runs: started in order, stopped in reverse, one replaced at a time.

Owns `RunningAdapters`: the lifecycle part of the adapters (`part`), `restart` (a platform
whose keys changed is stopped and the adapter built from the new config started, under
one lock, so a restart never races the part's start or stop), the adapters started, those
whose webhooks wait for a receipt, and the platforms whose changed config could not start
(readiness names them). The adapters dict is shared with delivery and the media reader,
which look an adapter up at each use. Knows nothing of configs: the caller builds adapters.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import asynccontextmanager

import structlog

from adapters.base import InboundMessage, PlatformAdapter
from adapters.receipts import IntakeReceipts
from gateway.lifecycle import ShutdownErrors

log = structlog.get_logger(__name__)
# The operator's readiness line (`/readyz`), not a chat text.
NOT_STARTED = "adapter {name} did not start after a config change: {why}"


class RunningAdapters:
    """The adapters by platform name (shared, mutable), and what runs of them.

    Args:
        adapters: by platform name; a restart replaces the entry in place.
        queue: where started adapters put inbound messages, read at each start (the gateway's queue may be replaced
            before it starts, as tests do).
        closing: collects failures to stop, logged by the gateway.
    """

    def __init__(
        self, adapters: MutableMapping[str, PlatformAdapter], queue: Callable[[], asyncio.Queue[InboundMessage]],
        closing: ShutdownErrors,
    ) -> None:
        self._adapters = adapters
        self._queue = queue
        self._closing = closing
        self.started: list[PlatformAdapter] = []
        self.receipts: dict[str, IntakeReceipts] = {}  # adapters whose webhooks wait for their message to be recorded
        self.failures: dict[str, str] = {}  # platform -> why its changed config could not start
        self._turns = asyncio.Lock()  # one restart at a time, never during the part's start or stop
        self._up = False  # the part is running: a replaced adapter is started at once

    @property
    def all_started(self) -> bool:
        """Every configured adapter runs, and no changed config failed to start."""
        return bool(self.started) and len(self.started) == len(self._adapters) and not self.failures

    def failure_reasons(self) -> list[str]:
        return [NOT_STARTED.format(name=name, why=why) for name, why in sorted(self.failures.items())]

    @asynccontextmanager
    async def part(self) -> AsyncIterator[None]:
        """Each adapter in order (one that fails stops those before it); at stop, the ones running then, restarted or not.

        Under the restart lock: a config change arriving while they start (a replica catching up) waits, then
        replaces the adapter that was started rather than one never started.
        """
        try:
            async with self._turns:
                for name, adapter in list(self._adapters.items()):
                    await self._start(name, adapter)
                self._up = True
            yield
        finally:
            async with self._turns:
                self._up = False
                for adapter in reversed(list(self.started)):
                    await self._stop(adapter)

    async def _start(self, name: str, adapter: PlatformAdapter) -> None:
        if isinstance(adapter, IntakeReceipts):
            adapter.expect_receipts()
            self.receipts[name] = adapter
        await adapter.start(self._queue())
        self.started.append(adapter)
        log.info("adapter.started", platform=name)

    async def _stop(self, adapter: PlatformAdapter) -> None:
        await self._closing.run(f"adapter {adapter.name}", adapter.stop)
        if adapter in self.started:
            self.started.remove(adapter)

    async def restart(
        self, name: str, build: Callable[[], PlatformAdapter | None], *, redact: Callable[[str], str] = str
    ) -> None:
        """Replace platform `name`'s adapter after its keys changed: stop the running one, start what `build` makes.

        `build` returns None when the platform is now disabled. A new config that cannot be built or started is
        logged and shown by readiness (`failures`, its text passed through `redact`, which hides the
        config's secrets); the gateway and the other adapters keep running.
        """
        async with self._turns:
            old = self._adapters.pop(name, None)
            self.receipts.pop(name, None)
            if old is not None and old in self.started:
                await self._stop(old)
                self._closing.log()
                log.info("adapter.stopped", platform=name, reason="config changed")
            try:
                adapter = build()
                if adapter is not None:
                    if self._up:
                        await self._start(name, adapter)
                    self._adapters[name] = adapter
            except Exception as exc:  # noqa: BLE001 - a bad new config must not take the gateway down
                # The first line only, secrets hidden: a platform error may echo a URL with the token in it.
                first = str(exc).splitlines()[0][:200] if str(exc) else ""
                self.failures[name] = redact(f"{type(exc).__name__}: {first}")
                log.error("adapter.restart_failed", platform=name, error=type(exc).__name__, fix="correct the platform's "
                          "keys and reload; the other adapters keep running")
                return
            self.failures.pop(name, None)


__all__ = ["RunningAdapters"]
