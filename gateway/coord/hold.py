"""`hold`: a session lock held for the duration of an `async with` body, renewed in the background.

Owns the renewals and the `Held` handle that reports a lost lease. A renewal
is a loop timer that starts a task only when due, so the common body, shorter
than ttl/3, costs no task at all. Knows only the `SessionLock` Protocol,
never a backend.
"""
from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

import structlog

from gateway.coord.base import DEFAULT_LOCK_TTL, CoordUnavailable, LockLease, SessionLock

log = structlog.get_logger(__name__)

RENEWALS_PER_TTL = 3
"""Renew every ttl/3, so two renewals can fail or be late before the lease expires."""


class LockBusy(Exception):
    """Control-flow signal from `hold`: another holder kept the lock for the whole `wait`.

    Not an error: a second worker on one session gives up (e.g. returns the
    messages uncompressed). `holder` is the other holder's token when known.
    """

    def __init__(self, key: str, *, holder: str | None) -> None:
        super().__init__(f"lock {key!r} is held by another owner")
        self.key = key
        self.holder = holder


class Held:
    """The handle `async with hold(...)` yields: the lease, and whether it was lost meanwhile."""

    def __init__(self, lock: SessionLock, key: str, *, ttl: float, wait: float | None) -> None:
        if ttl <= 0:
            raise ValueError(f"hold: ttl must be > 0 seconds, got {ttl}")
        self._lock = lock
        self._key = key
        self._ttl = ttl
        self._wait = wait
        self._lease: LockLease | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._lost = False
        self._lost_event: asyncio.Event | None = None  # made when asked for: most holds never are

    @property
    def lease(self) -> LockLease:
        if self._lease is None:
            raise RuntimeError("hold: the lease exists only inside `async with hold(...)`")
        return self._lease

    @property
    def lost(self) -> bool:
        """True once a renewal failed: another owner may now hold the lock."""
        return self._lost

    @property
    def lost_event(self) -> asyncio.Event:
        """Set once a renewal failed (to wait for the loss)."""
        if self._lost_event is None:
            self._lost_event = asyncio.Event()
            if self._lost:
                self._lost_event.set()
        return self._lost_event

    async def __aenter__(self) -> Held:
        if self._lease is not None:
            raise RuntimeError("hold: this handle is already entered; call hold() again for a new one")
        lease = await self._lock.acquire(self._key, ttl=self._ttl, wait=self._wait)
        if lease is None:
            raise LockBusy(self._key, holder=await self._lock.holder(self._key))
        self._lease = lease
        self._schedule(lease)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task, lease, timer = self._task, self._lease, self._timer
        self._task = self._timer = None
        if timer is not None:
            timer.cancel()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if lease is not None:
            # Even when lost: release checks the token, so it frees only what is still ours
            # (e.g. the local half of a fail-open lease) and never another holder's lock.
            try:
                await self._lock.release(lease)
            except CoordUnavailable:
                # The TTL frees it anyway; never let cleanup hide the body's own outcome.
                log.warning("coord.lock_release_failed", key=self._key)

    def _schedule(self, lease: LockLease) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._ttl / RENEWALS_PER_TTL, self._due, lease)

    def _due(self, lease: LockLease) -> None:
        self._timer = None  # a timer fires only inside the body: `__aexit__` cancels it
        self._task = asyncio.create_task(self._renew(lease), name=f"coord-renew:{self._key}")

    async def _renew(self, lease: LockLease) -> None:
        try:
            kept = await self._lock.renew(lease, ttl=self._ttl)
        except CoordUnavailable:
            kept = False
        me = asyncio.current_task()
        if me is not None and me.cancelling():
            # The exit cancelled us during the renewal and a socket timeout firing at that moment turned the
            # cancellation into an answer (Python 3.11's asyncio.timeout): schedule nothing after the exit.
            return
        self._task = None
        if not kept:
            log.warning("coord.lock_lost", key=self._key)
            self._lost = True
            if self._lost_event is not None:
                self._lost_event.set()
            return
        self._schedule(lease)


def hold(lock: SessionLock, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> Held:
    """Hold `lock` on `key` while an `async with` body runs, renewing every ttl/3.

    Example:
        >>> async with hold(coordinator.lock, session_key, ttl=30, wait=5) as held:
        ...     await run_turn()
        ...     if held.lost:
        ...         ...  # another process may have taken over; don't persist blindly

    Raises:
        LockBusy: on entry, when another holder kept it for the whole `wait`.
    """
    return Held(lock, key, ttl=ttl, wait=wait)
