"""`AdminBackend` over a running `Gateway`: its live agents, session store, shared agent cache and lanes.

Owns `GatewayBackend`. Sessions come from the store (active ones); a session
this process holds an agent for shows the engine's own figures (last real
`prompt_tokens`, threshold, compressions); others show the state saved in
the shared agent cache. An operator compression takes the session lock (so
it never runs beside a turn of the same session, in any process), compresses
with `force=True` like `/compress`, persists like a turn does (in place or
rotated to a child) and saves the agent state. Also refreshes the gauges read
at scrape time. Knows nothing of HTTP.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time

from structlog.contextvars import bound_contextvars

from adapters.base import ChatTarget
from agent.context.thresholds import compute_threshold, threshold_ratio
from agent.session import AgentState, SessionAgent, SessionMarks
from agent.store import SessionSummary, StoreError
from gateway.admin.backend import CompressOutcome, SessionBusy, SessionDetail, SessionNotFound, SessionView
from gateway.admin.events import EventLog
from gateway.app import Gateway
from gateway.chats.store import Usage
from gateway.config import ChorusConfig
from gateway.coord.hold import LockBusy
from gateway.intake.routing import Route, SessionKind
from gateway.ops.health import Readiness
from gateway.ops.live_config import LiveConfig
from gateway.ops.metrics import Metrics
from gateway.sessions.hygiene import HYGIENE_RATIO, estimate_history_tokens

MAX_LISTED = 200
ADMIN_LOCK_WAIT = 15.0  # an operator waits this long for a running turn of the session to finish


def _route(stored_key: str, platform: str, chat_scope: str) -> Route:
    """The route of an existing session, rebuilt from its key and chat scope."""
    parts = stored_key.split(":")
    kind: SessionKind = "dm"
    if len(parts) > 3 and parts[3] in ("group", "thread"):
        kind = "group" if parts[3] == "group" else "thread"
    chat_id = chat_scope.split(":", 1)[1] if ":" in chat_scope else chat_scope
    return Route(key=stored_key, kind=kind, shared=kind != "dm", target=ChatTarget(platform, chat_id), reason="admin")


class GatewayBackend:
    """The admin view of one gateway process.

    Args:
        gateway: the gateway (started before the admin API is served).
        events: the event log (last activity times, compression records).
        live: the runtime config (None: the start config is used for thresholds).
        config: the start config when `live` is None.
    """

    def __init__(
        self, gateway: Gateway, *, events: EventLog, live: LiveConfig | None = None, config: ChorusConfig | None = None
    ) -> None:
        if live is None and config is None:
            raise ValueError("GatewayBackend needs live= or config= to know the model window and thresholds")
        self._gateway = gateway
        self._events = events
        self._live = live
        self._config = config
        self._redis_errors_seen = 0
        self._store_errors_seen = 0
        self._store_write_errors_seen = 0

    def _current(self) -> ChorusConfig:
        if self._live is not None:
            return self._live.current()
        assert self._config is not None
        return self._config

    def _window(self) -> int:
        """The active model's window: a learned smaller one, or a fallback's, wins over the configured one."""
        windows = self._gateway.parts.windows
        return windows.active_window() if windows is not None else self._current().model.context_length

    def _threshold(self) -> int:
        config = self._current()
        ratio = threshold_ratio(config.model.name or "", config.compression.threshold,
                                config.compression.model_thresholds)
        return compute_threshold(self._window(), ratio, max_tokens=config.model.max_tokens,
                                 threshold_tokens=config.compression.threshold_tokens)

    def _live_agents(self) -> dict[str, SessionAgent]:
        return dict(self._gateway.parts.agents.live_agents())

    async def _with_chat(self, view: SessionView, summary: SessionSummary, state: AgentState | None) -> SessionView:
        """`view` with the per-chat figures: prompt source, model, this session's and the chat's tokens."""
        chats = self._gateway.parts.chats
        record = await asyncio.to_thread(chats.get, summary.session.chat_id) if chats is not None else None
        marks = state.marks if state is not None else SessionMarks()
        model = self._gateway.parts.agents.model_of(summary.session.key)
        if not model:
            model = (record.model if record is not None else None) or self._current().model.name or ""
        return dataclasses.replace(
            view, prompt_source=marks.prompt_source or "", model=model,
            session_tokens=Usage.from_json(marks.usage).total,
            chat_tokens=record.usage.total if record is not None else 0,
        )

    def _view_live(self, summary: SessionSummary, agent: SessionAgent) -> SessionView:
        lanes, key, engine = self._gateway.lanes, summary.session.key, agent.engine
        reported = engine.state.last_prompt_tokens
        tokens = reported if reported > 0 else estimate_history_tokens(agent.history)
        return SessionView(
            key=key, platform=summary.session.platform, chat=summary.session.chat_id, messages=len(agent.history),
            tokens=tokens, tokens_source="reported" if reported > 0 else "estimate",
            context_length=engine.context_length, threshold=engine.threshold_tokens,
            hygiene_threshold=int(engine.context_length * HYGIENE_RATIO),
            compressions=engine.state.compression_count, last_activity=self._activity(summary), live=True,
            busy=lanes.busy(key), queued=lanes.queued(key), blocked=engine.state.blocked_until > time.time(),
        )

    def _activity(self, summary: SessionSummary) -> float | None:
        return self._events.last_activity(summary.session.key) or summary.session.created_at

    async def _saved_state(self, session_id: str, chat_id: str) -> AgentState | None:
        parts = self._gateway.parts
        key = await asyncio.to_thread(parts.agents.chat_cache_key, session_id, chat_id)  # a chat on its own model
        raw = await parts.coordinator.agent_cache.load_state(key)
        return AgentState.from_json(raw) if raw is not None else None

    async def _view_saved(self, summary: SessionSummary) -> tuple[SessionView, AgentState | None]:
        state = await self._saved_state(summary.session.id, summary.session.chat_id)
        reported = state.engine.last_prompt_tokens if state is not None else 0
        context_length = self._window()
        view = SessionView(
            key=summary.session.key, platform=summary.session.platform, chat=summary.session.chat_id,
            messages=summary.messages, tokens=reported if reported > 0 else None,
            tokens_source="reported" if reported > 0 else "unknown", context_length=context_length,
            threshold=self._threshold(), hygiene_threshold=int(context_length * HYGIENE_RATIO),
            compressions=state.engine.compression_count if state is not None else 0,
            last_activity=self._activity(summary), live=False,
            busy=self._gateway.lanes.busy(summary.session.key), queued=self._gateway.lanes.queued(summary.session.key),
            blocked=state is not None and state.engine.blocked_until > time.time(),
        )
        return view, state

    async def _summaries(self) -> list[SessionSummary]:
        store = self._gateway.parts.store
        listed = await asyncio.to_thread(store.list_sessions, limit=MAX_LISTED)
        return [s for s in listed if s.session.active]

    async def sessions(self) -> list[SessionView]:
        """Active sessions, fullest first (sessions with unknown figures last)."""
        live = self._live_agents()

        async def one(summary: SessionSummary) -> SessionView:
            agent = live.get(summary.session.key)
            if agent is not None and agent.session_id == summary.session.id:
                return await self._with_chat(self._view_live(summary, agent), summary, agent.state)
            view, state = await self._view_saved(summary)
            return await self._with_chat(view, summary, state)

        # Saved states are read concurrently: one round trip each on Redis.
        views = await asyncio.gather(*(one(summary) for summary in await self._summaries()))
        return sorted(views, key=lambda v: (v.fill is None, -(v.fill or 0.0), v.key))

    async def _summary(self, key: str) -> SessionSummary:
        store = self._gateway.parts.store
        stored = await asyncio.to_thread(store.active_session, key)
        if stored is None:
            raise SessionNotFound(key)
        listed = await asyncio.to_thread(store.list_sessions, chat_id=stored.chat_id, limit=MAX_LISTED)
        for summary in listed:
            if summary.session.id == stored.id:
                return summary
        return SessionSummary(stored, 0, 0)

    async def session(self, key: str) -> SessionDetail:
        summary = await self._summary(key)
        agent = self._live_agents().get(key)
        if agent is not None and agent.session_id == summary.session.id:
            view = await self._with_chat(self._view_live(summary, agent), summary, agent.state)
            return SessionDetail(view, summary.session.id, agent.engine.state.previous_summary, summary.archived)
        view, state = await self._view_saved(summary)
        view = await self._with_chat(view, summary, state)
        last = state.engine.previous_summary if state is not None else None
        return SessionDetail(view, summary.session.id, last, summary.archived)

    async def compress(self, key: str) -> CompressOutcome:
        summary = await self._summary(key)
        parts = self._gateway.parts
        where = _route(key, summary.session.platform, summary.session.chat_id)
        try:
            async with parts.sessions.session(where, wait=ADMIN_LOCK_WAIT) as held:
                agent = held.agent
                before = len(agent.history)
                with bound_contextvars(session_key=key, platform=summary.session.platform):
                    result = await parts.sessions.compress(where, agent, trigger="manual", force=True)
        except LockBusy:
            raise SessionBusy(key) from None
        return CompressOutcome(
            key=key, outcome=result.outcome, tokens_before=result.tokens_before, tokens_after=result.tokens_after,
            messages_before=before, messages_after=len(agent.history), summary_kind=result.summary_kind,
            reason=result.reason, elapsed_ms=round(result.elapsed_ms, 1),
        )

    async def readiness(self) -> Readiness:
        return await self._gateway.readiness()

    def refresh_metrics(self, metrics: Metrics) -> None:
        """Set the gauges read at scrape time (queue depth, live agents) and catch up Redis errors."""
        keys = [key for key, _ in self._gateway.parts.agents.live_agents()]
        metrics.queue_depth.set(sum(self._gateway.lanes.queued(key) for key in keys))
        metrics.live_agents.set(len(keys))
        chats = self._gateway.parts.chats
        # The chat store may be the shared database: while it fails its pings, keep the last figures
        # rather than make the scrape wait for a pool timeout.
        if chats is not None and self._gateway.store_health.ok:
            try:
                usage_by_platform = chats.usage_by_platform()
            except StoreError:
                usage_by_platform = {}
            for platform, usage in usage_by_platform.items():
                metrics.chat_tokens.labels(platform=platform, direction="prompt").set(usage.prompt_tokens)
                metrics.chat_tokens.labels(platform=platform, direction="completion").set(usage.completion_tokens)
        hub = self._gateway.parts.mcp
        for status in hub.statuses() if hub is not None else ():
            metrics.mcp_server_up.labels(server=status.name).set(1 if status.state == "up" else 0)
        errors = self._gateway.parts.coordinator.errors
        if errors > self._redis_errors_seen:
            metrics.redis_errors.inc(errors - self._redis_errors_seen)
            self._redis_errors_seen = errors
        backlog = self._gateway.journal_backlog  # read by the lease loop: a scrape never queries the database
        if backlog is not None:
            metrics.journal_entries.labels(state="claimed").set(backlog.claimed)
            metrics.journal_entries.labels(state="expired").set(backlog.expired)
        store = self._gateway.store_health
        metrics.store_ping_seconds.set(store.seconds)
        metrics.store_up.set(1 if store.ok else 0)
        if store.errors > self._store_errors_seen:
            metrics.store_errors.inc(store.errors - self._store_errors_seen)
            self._store_errors_seen = store.errors
        for platform, report in self._gateway.adapter_watch.check(self._gateway.parts.adapters).items():
            metrics.adapter_up.labels(platform=platform).set(1 if report.alive else 0)
        writes = self._gateway.parts.runner.store_writes
        metrics.store_writable.set(1 if writes.ok else 0)
        if writes.failures > self._store_write_errors_seen:
            metrics.store_write_errors.inc(writes.failures - self._store_write_errors_seen)
            self._store_write_errors_seen = writes.failures


__all__ = ["ADMIN_LOCK_WAIT", "GatewayBackend"]
