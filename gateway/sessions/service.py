"""The one owner of work on a session: lock → agent → work → persist → save.

Owns `SessionService`. Turns, hygiene, idle compaction, `/compress`, `/new` and the admin "compress now"
all go through it, so the order of the steps and the store writes after a compression are written once.
Knows nothing of platforms or of how a reply is delivered: callers do that with the agent it hands them.
"""
from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import structlog

from agent.context.engine import CompressionResult, EventSink, Trigger
from agent.messages import Message
from agent.session import SessionAgent
from agent.store import SessionStore
from gateway.coord.base import SessionLock
from gateway.coord.hold import Held, hold
from gateway.intake.routing import Route
from gateway.sessions.agents import AgentPool
from gateway.sessions.appends import AppendBatcher
from gateway.telemetry.spans import SPANS, stage

log = structlog.get_logger(__name__)

LOCK_TTL = 30.0
LOCK_WAIT = 600.0


@dataclass(frozen=True, slots=True)
class HeldSession:
    """A session's agent while its lock is held (`held.lost` turns true if the lease could not be renewed)."""

    agent: SessionAgent
    held: Held


class SessionEntry:
    """`SessionService.session`'s `async with`: the lock held, then the agent; the lock freed on exit.

    A class, not an `asynccontextmanager`: entered by every job, its generator and wrapper cost more
    calls than the lock and the agent lookup they wrap.
    """

    __slots__ = ("_agents", "_hold", "_route")

    def __init__(self, agents: AgentPool, route: Route, held: Held) -> None:
        self._agents = agents
        self._route = route
        self._hold = held

    async def __aenter__(self) -> HeldSession:
        with stage(SPANS.SESSION_LOCK):  # inside a traced job: how long the lock kept it waiting
            held = await self._hold.__aenter__()
        try:
            agent = await self._agents.get(self._route)
        except BaseException as exc:
            await self._hold.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return HeldSession(agent, held)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._hold.__aexit__(exc_type, exc, tb)


class SessionService:
    """Runs work on one session at a time across processes, and persists what the work changed.

    Args:
        agents: the live agent pool.
        store: the session store.
        lock: the cross-process session lock.
        in_place: after a compression, soft-archive the replaced turns (true) or rotate to a child session.
        lock_ttl: seconds a session lock outlives a process that died holding it (`gateway.lease_seconds`).
    """

    def __init__(
        self, *, agents: AgentPool, store: SessionStore, lock: SessionLock, in_place: bool, lock_ttl: float = LOCK_TTL,
    ) -> None:
        self.agents = agents
        self._store = store
        self._lock = lock
        self._lock_ttl = lock_ttl
        self._appends = AppendBatcher(store)
        self._finishing: set[asyncio.Future[None]] = set()  # persists carried on past a cancelled caller
        self.in_place = in_place

    def session(self, route: Route, *, wait: float | None = LOCK_WAIT) -> SessionEntry:
        """Hold `route`'s lock (renewed while the block runs) and hand over its agent; raises `LockBusy`."""
        return SessionEntry(self.agents, route, hold(self._lock, route.key, ttl=self._lock_ttl, wait=wait))

    async def append(self, agent: SessionAgent, messages: Sequence[Message]) -> None:
        """Add messages to the active session (group commit with other sessions' appends)."""
        await self._appends.append(agent.session_id, messages)

    async def persist(self, route: Route, agent: SessionAgent, *, compressed: bool, new: Sequence[Message] = ()) -> None:
        """Store what a job changed, then save the agent's state for other processes."""
        if not compressed:
            await self.append(agent, new)
        elif self.in_place:
            await asyncio.to_thread(self._store.replace_active, agent.session_id, list(agent.history))
        else:
            child = await asyncio.to_thread(self._store.rotate, agent.session_id, list(agent.history))
            agent.session_id = child.id
        await self.agents.save(route, agent)

    async def persist_through(
        self, route: Route, agent: SessionAgent, *, compressed: bool, new: Sequence[Message] = ()
    ) -> None:
        """`persist`, carried to its end when the caller is cancelled meanwhile (as `asyncio.shield` would).

        A turn's plain append (the common case) waits on its group-commit entry
        directly: no task, and no shield (a future, a callback and a loop turn)
        per turn. The entry is written even if its caller is cancelled; then the
        state is saved after it commits, in the background.
        """
        if compressed or not new:
            await asyncio.shield(self.persist(route, agent, compressed=compressed, new=new))
            return
        written, kept = self._appends.append_kept(agent.session_id, new)
        try:
            await written
        except asyncio.CancelledError:
            # `written` is cancelled unless it was settled just before the cancellation reached this task.
            self._background(self._save_after(kept if written.cancelled() else written, route, agent))
            raise
        try:
            await self.agents.save(route, agent)
        except asyncio.CancelledError:
            self._background(self.agents.save(route, agent))  # saving again is harmless: the same state
            raise

    async def settle(self) -> None:
        """Wait for the persists still carried on after their callers were cancelled."""
        if self._finishing:
            await asyncio.gather(*self._finishing, return_exceptions=True)

    async def _save_after(self, written: asyncio.Future[None], route: Route, agent: SessionAgent) -> None:
        try:
            await written
        except Exception as exc:  # noqa: BLE001 - its caller was cancelled: the journal re-runs the message
            log.warning("turn.persist_failed", error=type(exc).__name__)
            return
        await self.agents.save(route, agent)

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    async def compress(
        self, route: Route, agent: SessionAgent, *, trigger: Trigger, force: bool = False,
        on_event: EventSink | None = None, save_unchanged: bool = True,
    ) -> CompressionResult:
        """Compress the session's history and persist the result: the one compress-then-persist.

        `/compress`, the admin's "compress now", hygiene and idle compaction all come here; a compression
        that changed the history clears the hygiene stall mark. When nothing changed the state (the attempt's
        anti-thrash marks) is still saved for other processes, unless `save_unchanged` is False (inside a
        turn, which saves it anyway).
        """
        result = await agent.compress(trigger=trigger, force=force, on_event=on_event)
        if result.changed:
            agent.state.marks.stalled_at = None
            await self.persist(route, agent, compressed=True)
        elif save_unchanged:
            await self.agents.save(route, agent)
        return result

    async def reset(self, route: Route) -> bool:
        """`/new`: end the session; the next message starts a fresh one (notes are kept)."""
        async with hold(self._lock, route.key, ttl=self._lock_ttl, wait=LOCK_WAIT):
            return await self.agents.reset(route)


__all__ = ["LOCK_TTL", "LOCK_WAIT", "HeldSession", "SessionEntry", "SessionService"]
