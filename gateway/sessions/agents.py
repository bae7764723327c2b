"""The per-process pool of live session agents, kept consistent with the shared agent cache.

Owns `AgentPool`: a local LRU of `SessionAgent`s by session key, bounded by
`gateway.agent_cache_size`. Before reusing a live agent it asks the shared
`AgentCache` who touched the session last; if another process did, the live
agent is stale and is rebuilt from the session store plus the saved agent
state (`load_state`). Keys the shared LRU evicts are dropped here too. Must be
called with the session lock held (the gateway does), so owner checks and
saves never race another process. With `check_store` (replicas sharing a
PostgreSQL store) a live agent is also checked against the store before each
use: the open session must be its session and hold as many active messages
as its history, else another replica ran a turn the shared cache could not
tell of (it was down, or came back empty or from an old snapshot) and the
agent is rebuilt. Knows nothing of platforms.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from agent.context.engine import ContextEngine, EngineState
from agent.loop import LoopSettings
from agent.messages import Message
from agent.model_client import ModelClient
from agent.session import AgentState, SessionAgent
from agent.store import SessionStore, StoredSession
from agent.store.protocol import SessionStamps
from agent.tools.base import Tool, ToolSource
from gateway.chats.models import ChatModel
from gateway.coord.base import AgentCache, agent_cache_key
from gateway.intake.routing import Route
from gateway.ops.events import AgentBuilt, AgentEvicted, EventBus
from gateway.sessions.appends import GroupCommit

log = structlog.get_logger(__name__)

NO_MODEL = "unconfigured"


@dataclass(frozen=True, slots=True)
class AgentFactory:
    """How to make the parts of a new agent.

    `persona` gives a chat's base prompt and its source (frozen into a new
    session's state); `chat_model` gives a chat's chosen model (None: the
    pool's model and `engine`).
    """

    engine: Callable[[], ContextEngine]
    tools: Callable[[str], Sequence[Tool]]  # by chat id
    snapshot: Callable[[str], str]  # the notes' frozen snapshot, by chat id
    loop_settings: LoopSettings
    base_prompt: str
    persona: Callable[[str], tuple[str, str]] | None = None
    chat_model: Callable[[str], ChatModel | None] | None = None
    tool_source: Callable[[Route], ToolSource | None] | None = None  # the chat's MCP tools, if any


@dataclass(slots=True)
class _Live:
    agent: SessionAgent
    cache_key: str
    model: str = ""


class AgentPool:
    """Live agents of this process.

    Args:
        store: the session store (sync; called through `asyncio.to_thread`).
        cache: the shared agent cache.
        model: the main model client shared by every agent.
        factory: builds engines, tools, snapshots.
        owner: this process's id in the shared cache.
        home: the data directory (part of the cache key).
        capacity: local bound of live agents.
        bus: where agent built / evicted events are published.
        check_store: check a live agent against the store before each use (replicas share the store).
    """

    def __init__(
        self,
        *,
        store: SessionStore,
        cache: AgentCache,
        model: ModelClient,
        factory: AgentFactory,
        owner: str,
        home: str,
        capacity: int,
        bus: EventBus | None = None,
        check_store: bool = False,
    ) -> None:
        self._bus = bus or EventBus()
        self._store = store
        self._cache = cache
        self._model = model
        self._factory = factory
        self.owner = owner
        self._home = home
        self._capacity = capacity
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self._by_cache_key: dict[str, str] = {}
        # Many chats starting at once (a restart, a burst) share one store transaction and thread hop.
        self._loads: GroupCommit[Route, tuple[StoredSession, list[Message]]] = GroupCommit(self._load_many, name="agent-loads")
        self._snapshots: GroupCommit[str, str] = GroupCommit(self._snapshot_many, name="agent-snapshots")
        self._stamps: GroupCommit[str, tuple[str, int] | None] | None = None
        if check_store and isinstance(store, SessionStamps):
            self._stamps = GroupCommit(self._stamp_many, name="agent-stamps")
        self.rebuilds = 0
        self.stale = 0  # live agents found behind the store (another replica ran a turn meanwhile)

    def __len__(self) -> int:
        return len(self._live)

    @property
    def capacity(self) -> int:
        """The local bound of live agents (`gateway.agent_cache_size`, live)."""
        return self._capacity

    @capacity.setter
    def capacity(self, value: int) -> None:
        self._capacity = value

    def follow(self, loop_settings: LoopSettings) -> None:
        """A changed config: new agents get `loop_settings` and the model in force; live ones are dropped here, so
        each session's next turn rebuilds its agent from the store (a turn running now finishes on the old one)."""
        self._factory = dataclasses.replace(self._factory, loop_settings=loop_settings)
        self._live.clear()
        self._by_cache_key.clear()

    def cache_key(self, session_id: str, *, model: str | None = None) -> str:
        return agent_cache_key(session_id, self._home, model or self._model.model or NO_MODEL)

    def chat_cache_key(self, session_id: str, chat_id: str) -> str:
        """The cache key a session's saved state is under, for the chat's current model (sync: a store read)."""
        chosen = self._factory.chat_model(chat_id) if self._factory.chat_model is not None else None
        return self.cache_key(session_id, model=chosen.client.model if chosen is not None else None)

    def model_of(self, key: str) -> str:
        """The model name the live agent of session `key` talks to ("" when none is live here)."""
        live = self._live.get(key)
        return live.model if live is not None else ""

    def peek(self, route: Route) -> SessionAgent | None:
        """The live agent of a session, if this process has one (no I/O)."""
        live = self._live.get(route.key)
        return live.agent if live is not None else None

    async def get(self, route: Route) -> SessionAgent:
        """The session's agent: the live one if this process still owns it, else rebuilt."""
        live = self._live.get(route.key)
        if live is not None and await self._cache.owner(live.cache_key) == self.owner and await self._current(route, live):
            # Still ours: nobody else ran, reset or rotated this session since (they would own or evict the key).
            self._live.move_to_end(route.key)
            await self._touch(live.cache_key)
            return live.agent
        if live is not None:
            self._drop(route.key)  # stale: another process ran, reset or rotated the session since
        stored, history = await self._loads.submit(route)
        chosen = None
        if self._factory.chat_model is not None:
            chosen = await asyncio.to_thread(self._factory.chat_model, route.chat_scope)
        client = chosen.client if chosen is not None else self._model
        key = self.cache_key(stored.id, model=client.model)
        agent = await self._build(stored.id, route, key, history, chosen)
        live = _Live(agent, key, client.model)
        self._live[route.key] = live
        self._by_cache_key[key] = route.key
        await self._touch(key)
        while len(self._live) > self._capacity:
            oldest = next(iter(self._live))
            self._drop(oldest)
        return live.agent

    async def _current(self, route: Route, live: _Live) -> bool:
        """Whether the store agrees with the live agent: the same open session, as many active messages."""
        if self._stamps is None:
            return True
        stamp = await self._stamps.submit(route.key)
        agent = live.agent
        if stamp == (agent.session_id, len(agent.history)):
            return True
        self.stale += 1
        log.info("agent.stale", session_id=agent.session_id, messages=len(agent.history),
                 stored=stamp[1] if stamp is not None and stamp[0] == agent.session_id else None)
        return False

    def _stamp_many(self, keys: list[str]) -> list[tuple[str, int] | None | Exception]:
        """The open session and its active message count of several chats, in one query."""
        assert isinstance(self._store, SessionStamps)  # `_stamps` exists only then
        found = self._store.active_stamps(sorted(set(keys)))
        return [found.get(key) for key in keys]

    def _load_many(self, routes: list[Route]) -> list[tuple[StoredSession, list[Message]] | Exception]:
        """The active sessions (created when missing) and their messages, for several chats in one trip."""
        sessions = self._store.ensure_sessions([(r.key, r.target.platform, r.chat_scope) for r in routes])
        loaded: list[tuple[StoredSession, list[Message]] | Exception] = []
        for stored in sessions:
            if isinstance(stored, Exception):
                loaded.append(stored)
                continue
            try:
                loaded.append((stored, self._store.active_messages(stored.id)))
            except Exception as exc:  # noqa: BLE001 - handed to that chat's caller alone
                loaded.append(exc)
        return loaded

    def _snapshot_many(self, chat_ids: list[str]) -> list[str | Exception]:
        """The notes' frozen snapshots of several chats, in one trip to a worker thread."""
        snapshots: list[str | Exception] = []
        for chat_id in chat_ids:
            try:
                snapshots.append(self._factory.snapshot(chat_id))
            except Exception as exc:  # noqa: BLE001 - handed to that chat's caller alone
                snapshots.append(exc)
        return snapshots

    async def _build(
        self, session_id: str, route: Route, key: str, history: list[Message], chosen: ChatModel | None
    ) -> SessionAgent:
        chat_id = route.chat_scope
        raw = await self._cache.load_state(key)
        if raw is not None:
            state = AgentState.from_json(raw)
        else:
            snapshot = await self._snapshots.submit(chat_id)
            state = AgentState(session_id=session_id, snapshot=snapshot)
        prompt = state.marks.base_prompt
        if prompt is None:
            prompt, source = self._factory.base_prompt, "default"
            if self._factory.persona is not None:
                prompt, source = self._factory.persona(chat_id)
            state.marks.base_prompt, state.marks.prompt_source = prompt, source
        self.rebuilds += 1
        log.info("agent.built", session_id=session_id, messages=len(history), restored=raw is not None)
        self._bus.publish(AgentBuilt(session_id, restored=raw is not None))
        return SessionAgent(
            session_id=session_id,
            history=history,
            engine=chosen.engine() if chosen is not None else self._factory.engine(),
            model=chosen.client if chosen is not None else self._model,
            tools=self._factory.tools(chat_id),
            loop_settings=self._factory.loop_settings,
            base_prompt=prompt,
            state=state,
            tool_source=self._factory.tool_source(route) if self._factory.tool_source is not None else None,
        )

    async def _touch(self, key: str) -> None:
        for evicted in await self._cache.touch(key, owner=self.owner):
            route_key = self._by_cache_key.get(evicted)
            if route_key is not None:
                log.info("agent.evicted", cache_key=evicted)
                self._bus.publish(AgentEvicted(evicted))
                self._drop(route_key)

    def forget(self, route: Route) -> None:
        """Drop this process's live agent of a session (the next turn rebuilds it from the store)."""
        self._drop(route.key)

    def _drop(self, route_key: str) -> None:
        live = self._live.pop(route_key, None)
        if live is not None:
            self._by_cache_key.pop(live.cache_key, None)

    async def save(self, route: Route, agent: SessionAgent) -> None:
        """Save the agent's state to the shared cache (after a turn or a compression)."""
        live = self._live.get(route.key)
        key = self.cache_key(agent.session_id, model=live.model if live is not None else None)
        if live is not None and live.cache_key != key:
            # The session rotated to a child: the old key's state is no longer anyone's.
            await self._cache.evict(live.cache_key)
            self._by_cache_key.pop(live.cache_key, None)
            live.cache_key = key
            self._by_cache_key[key] = route.key
            await self._touch(key)
        await self._cache.save_state(key, agent.export_state().to_json())

    async def reset(self, route: Route) -> bool:
        """`/new`: end the active session, forget its agent here and in the shared cache."""
        stored = await asyncio.to_thread(self._store.active_session, route.key)
        live = self._live.get(route.key)
        self._drop(route.key)
        if stored is None:
            return False
        await self._cache.evict(self.cache_key(stored.id))
        if live is not None and live.cache_key != self.cache_key(stored.id):
            await self._cache.evict(live.cache_key)
        await asyncio.to_thread(self._store.end_session, stored.id)
        return True

    async def switch_model(self, route: Route, model: str, *, previous: str) -> None:
        """After `/model` (from `previous`): the session keeps its history and frozen prompt; the engine starts afresh.

        Called with the session lock held; the next `get` builds the agent on the chat's new model.
        The saved state moves from the `previous` model's cache key to the new one even when
        another replica holds the agent: evicting its key makes that replica rebuild, on `model`.
        """
        live = self._live.get(route.key)
        state: AgentState | None = None
        if live is not None:
            session_id, state = live.agent.session_id, live.agent.export_state()
            self._drop(route.key)
            await self._cache.evict(live.cache_key)
        else:
            stored = await asyncio.to_thread(self._store.active_session, route.key)
            if stored is None:
                return
            session_id = stored.id
        # The key the other replicas' agents are under (this one's may be built on `model` already).
        old_key = self.cache_key(session_id, model=previous)
        if state is None and (raw := await self._cache.load_state(old_key)) is not None:
            state = AgentState.from_json(raw)
        await self._cache.evict(old_key)
        if state is not None:
            state.engine = EngineState(model=model)
            await self._cache.save_state(self.cache_key(session_id, model=model), state.to_json())

    def live_agents(self) -> Sequence[tuple[str, SessionAgent]]:
        return [(key, live.agent) for key, live in self._live.items()]


__all__ = ["NO_MODEL", "AgentFactory", "AgentPool", "ChatModel"]
