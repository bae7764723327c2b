"""Composition root: from a `ChorusConfig` to a ready-to-start `Gateway` (no I/O here).

Owns `build_gateway` and the few choices it makes: the coordinator (Redis or
embedded; the embedded outbox is journaled to `<home>/outbox.jsonl` so a
restart resends what was never acknowledged), the session store under home,
the model client (a `LiveModel`, swapped when `model.*` changes), the context
engine per agent, the agent tools, the notes snapshot, the adapters (built in
`gateway/platforms/adapters.py`) and the `Rebuilders` the live-config
followers remake parts with (`gateway/live_parts.py`). Secrets are unwrapped
here and handed on as plain arguments, never logged.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence

import structlog

from adapters.base import PlatformAdapter
from agent.context import Summarizer
from agent.context.engine import ContextEngine
from agent.context.factory import BUILTIN_ENGINE, build_compressor, build_engine, build_summarizer
from agent.context.user_words import handoff_sections
from agent.loop import LoopSettings
from agent.memory import NotesStore
from agent.memory.llm_screen import LlmScreen, build_llm_screen
from agent.memory.providers import MemoryManager, ProviderRegistry
from agent.memory.semantic import SemanticMemory
from agent.model_client import ModelClient, OpenAIModelClient
from agent.model_retry import ChainEntry, FailoverObserver, ResilientModelClient, RetryPolicy
from agent.model_windows import ModelEndpoint, ModelWindows
from agent.plugins import PluginErrorSink
from agent.prompt import DEFAULT_BASE_PROMPT
from agent.review import BackgroundReviewer
from agent.settings import MemorySettings
from agent.store import is_postgres_url
from agent.store.postgres import PostgresSessionStore
from agent.tokens import default_counter
from agent.tools.base import Tool, ToolSource
from agent.tools.mcp import McpHub
from agent.tools.memory_tool import MemoryTool
from agent.tools.session_search import QueryEmbedder, SessionSearchTool
from agent.tools.skills import SkillManageTool, SkillViewTool
from agent.transcription import OpenAITranscriber
from gateway.app import Gateway, GatewayParts
from gateway.approvals import Approvals
from gateway.approvals.commands import ApprovalDesk
from gateway.approvals.posting import DeliveryPoster
from gateway.chats.models import ChatModels, LiveModel, ModelClients, with_model
from gateway.chats.policy import ChatPolicy, ModelChoice
from gateway.chats.provenance import admins_by_platform
from gateway.chats.tool_access import tool_access
from gateway.commands.chat import ChatCommands
from gateway.commands.status import ActivePlugins
from gateway.config import ChorusConfig
from gateway.config import limits_clock as test_clock
from gateway.coord import Coordinator, memory_coordinator, redis_coordinator
from gateway.coord.base import Outbox
from gateway.delivery.outbound import SEND_CLAIM_TTL, Delivery
from gateway.delivery.outbox_file import JournaledOutbox
from gateway.delivery.reactions import Reactions
from gateway.i18n import Phrase, language_for, say
from gateway.intake.bots import BotLoopGuard
from gateway.intake.busy import BusyMode, BusyRules, Timers
from gateway.intake.deadletter import DeadLetterBox
from gateway.intake.decide import Intake, IntakeSettings
from gateway.intake.entries import JournalEntries
from gateway.intake.journal import InboundJournal
from gateway.intake.journals import Journal, JournalCheckedDeduplicator, SharedJournal
from gateway.intake.routing import Route
from gateway.intake.triggers import observes_unmentioned
from gateway.limits import build_spend_gate
from gateway.memory_providers import provider_registry
from gateway.ops.events import EventBus, PluginFailed
from gateway.platforms.adapters import (
    ADAPTER_NAMES,
    PLATFORM_FACTORIES,
    AttachmentSources,
    access_rules,
    attachment_sources,
    build_adapter,
    build_adapters,
    command_menu,
    leased_adapter,
    leased_adapters,
    listener_limits,
)
from gateway.rebuild import Rebuilders
from gateway.schedules.book import ScheduleBook
from gateway.schedules.home import HomeChannel
from gateway.schedules.runner import Scheduler
from gateway.schedules.tool import ScheduleTool
from gateway.sessions.agents import AgentFactory, AgentPool
from gateway.sessions.media import MediaReader, MediaSettings
from gateway.sessions.review import ReviewHooks
from gateway.sessions.service import SessionService
from gateway.sessions.store_lock import StoreSessionLock
from gateway.sessions.store_writes import StoreWrites
from gateway.sessions.turns import FinishedTurn, PostTurnHook, TurnRunner, TurnSettings
from gateway.shared import PostgresJournal, PostgresOutbox
from gateway.stores import Stores, approval_store, build_stores, schedule_store, window_store

log = structlog.get_logger(__name__)

MODEL_MISSING_TEXT = say("en", "turn.model_missing")  # the operator's log line (the chat hears its own language)


def model_missing_text(config: ChorusConfig) -> Phrase | None:
    """The web chat's banner while no model is configured (`gateway.language` when fixed, else English)."""
    return say(language_for(config, "", None), "turn.model_missing") if not config.model.name else None


def build_coordinator(config: ChorusConfig, *, node: str) -> tuple[Coordinator, Outbox]:
    """The coordinator and the outbox the gateway records replies in."""
    size = config.gateway.agent_cache_size
    if config.redis.url:
        url = config.store.url
        # Replicas sharing a PostgreSQL store lock sessions there, Redis or not (gateway/coord/authority.py).
        store_lock = StoreSessionLock(url, node=node) if url is not None and is_postgres_url(url) else None
        coord = redis_coordinator(
            config.redis.url, prefix=config.redis.key_prefix, agent_cache_size=size, node=node, store_lock=store_lock,
        )
        return coord, coord.outbox
    coord = memory_coordinator(agent_cache_size=size, node=node)
    return coord, JournaledOutbox(coord.outbox, config.home_dir / "outbox.jsonl")


def build_journal(
    config: ChorusConfig, stores: Stores, outbox: Outbox, *, node: str
) -> tuple[Journal, Outbox]:
    """The inbound journal and the outbox: shared PostgreSQL rows when replicas share the store and Redis.

    Replicas with separate homes (`store.url` postgresql and `redis.url` set) must see each other's
    unfinished messages and unsent replies, to take them over when one dies; otherwise both stay per home.
    """
    if config.redis.url and isinstance(stores.sessions, PostgresSessionStore):
        connect = stores.sessions.connection
        journal = PostgresJournal(connect, node=node, lease_seconds=config.gateway.lease_seconds, url=config.store.url)
        return journal, PostgresOutbox(connect)
    return InboundJournal(config.home_dir / "inflight", node=node), outbox


def model_windows(config: ChorusConfig) -> ModelWindows:
    """The learned windows (`model_windows.json` under home, or the shared store's table), the main model active."""
    model = config.model
    main = ModelEndpoint(name=model.name or "", base_url=model.base_url, context_length=model.context_length)
    return ModelWindows(main, window_store(config))


def build_model(
    config: ChorusConfig, windows: ModelWindows | None = None, *, observe: FailoverObserver | None = None
) -> ResilientModelClient:
    """The main model with `model.retry`, then `model.fallbacks` in order, each with its own window.

    `observe` hears of every move to a fallback (the bus: the dashboard lists it with the fix).
    """
    model = config.model
    windows = windows or model_windows(config)
    chain = [ChainEntry(
        OpenAIModelClient(
            model=model.name, base_url=model.base_url,
            api_key=model.api_key.get_secret_value() if model.api_key else None, timeout_seconds=model.timeout_seconds,
        ),
        windows.main,
    )]
    for fallback in model.fallbacks:
        key = fallback.api_key or model.api_key  # a fallback on the same provider shares the key
        base_url = fallback.base_url or model.base_url
        chain.append(ChainEntry(
            OpenAIModelClient(
                model=fallback.name, base_url=base_url, api_key=key.get_secret_value() if key else None,
                timeout_seconds=model.timeout_seconds,
            ),
            ModelEndpoint(name=fallback.name, base_url=base_url, context_length=fallback.context_length),
        ))
    return ResilientModelClient(
        chain, windows=windows, policy=RetryPolicy.from_settings(model.retry), strip_reasoning=config.agent.strip_reasoning,
        observe=observe,
    )


def model_chain(
    injected: ModelClient | None, windows: ModelWindows, *, observe: FailoverObserver | None
) -> Callable[[ChorusConfig], ModelClient]:
    """How a changed `model.*` becomes a new chain (an injected test client stays what it is)."""

    def build(config: ChorusConfig) -> ModelClient:
        if injected is not None:
            return injected
        model = config.model
        windows.main = ModelEndpoint(name=model.name or "", base_url=model.base_url, context_length=model.context_length)
        windows.set_active(windows.main)
        return build_model(config, windows, observe=observe)

    return build


def plugin_errors(bus: EventBus) -> PluginErrorSink:
    """Report a plugin failing at run time as a `PluginFailed` event (`chorus_plugin_errors{plugin,kind}`)."""
    return lambda plugin, kind: bus.publish(PluginFailed(plugin=plugin, kind=kind))


def engine_factory(
    config: ChorusConfig, *, summarizer: Summarizer | None = None, windows: ModelWindows | None = None,
    on_plugin_error: PluginErrorSink | None = None,
) -> Callable[[], ContextEngine]:
    """A new context engine per agent; the built-in one shares one summariser (and the model windows).

    A plugin engine (`context.engine`) is wrapped in a `GuardedEngine` reporting to `on_plugin_error`.
    """
    counter = default_counter()
    sections = handoff_sections(config.compression)
    if config.context.engine != BUILTIN_ENGINE:
        return lambda: build_engine(
            config.context, config.compression, config.model, config.auxiliary, counter=counter, sections=sections,
            on_error=on_plugin_error,
        )
    shared = summarizer if summarizer is not None else build_summarizer(config.model, config.auxiliary)
    return lambda: build_compressor(
        config.compression, config.model, config.auxiliary, counter=counter, sections=sections, summarizer=shared,
        window=windows,
    )


def check_engine(config: ChorusConfig) -> None:
    """Build the configured plugin engine once, so a bad `context.engine` stops the start, not a first turn.

    Raises:
        ConfigError: the name is unknown (the message lists the installed ones), or the plugin fails to load or build.
    """
    if config.context.engine != BUILTIN_ENGINE:
        build_engine(config.context, config.compression, config.model, config.auxiliary, counter=default_counter(),
                     sections=handoff_sections(config.compression))


def build_transcriber(config: ChorusConfig) -> OpenAITranscriber | None:
    """`transcription.*`, with base_url and api_key defaulting to the main model's."""
    settings = config.transcription
    if not settings.enabled:
        return None
    key = settings.api_key or config.model.api_key
    return OpenAITranscriber(
        model=settings.model, base_url=settings.base_url or config.model.base_url,
        api_key=key.get_secret_value() if key else None, timeout_seconds=config.model.timeout_seconds,
    )


def media_settings(config: ChorusConfig) -> MediaSettings:
    """`model.vision` and the byte caps."""
    return MediaSettings(
        vision=config.model.vision, max_attachment_bytes=config.gateway.max_attachment_bytes,
        max_text_file_bytes=config.gateway.max_text_file_bytes,
    )


def media_reader(
    config: ChorusConfig, adapters: Mapping[str, PlatformAdapter], transcriber: OpenAITranscriber | None
) -> MediaReader:
    """Attachments into turns: the adapters that download, `model.vision` and the byte caps."""
    return MediaReader(AttachmentSources(adapters), media_settings(config), transcriber=transcriber)


def notes_on(settings: MemorySettings) -> bool:
    """Notes are kept (`memory.memory_enabled` or `memory.user_profile_enabled`)."""
    return settings.memory_enabled or settings.user_profile_enabled


def builtin_tools(
    stores: Stores, memory_tool: MemoryTool, skill_manage: SkillManageTool, *,
    schedule: Tool | None = None, scheduling_on: Callable[[], bool] = lambda: False,
    embedder: QueryEmbedder | None = None,
) -> Callable[[str], Sequence[Tool]]:
    """Every chat's built-in tools: memory (while notes are on, read at each new agent), session_search (hybrid
    with `embedder`), the skills, and `schedule` while `scheduling.enabled` (as the running config says when the
    chat's agent is built)."""
    always: tuple[Tool, ...] = (SessionSearchTool(stores.sessions, embedder), SkillViewTool(stores.skills), skill_manage)
    with_notes = (memory_tool, *always)

    def default_tools(_chat: str) -> Sequence[Tool]:
        tools = with_notes if notes_on(stores.notes.settings) else always
        return (*tools, schedule) if schedule is not None and scheduling_on() else tools

    return default_tools


def chat_model_engine(policy: ChatPolicy) -> Callable[[ModelChoice], ContextEngine]:
    """The engine of a chat that switched model (`/model`): the built-in one, sized for that model's window."""
    shared_summarizer = build_summarizer(policy.config.model, policy.config.auxiliary)

    def build(choice: ModelChoice) -> ContextEngine:
        return engine_factory(with_model(policy.config, choice), summarizer=shared_summarizer)()

    return build


def turn_settings(config: ChorusConfig, *, missing: bool, admins: Mapping[str, frozenset[str]]) -> TurnSettings:
    return TurnSettings(
        in_place=config.compression.in_place,
        progress_notices=config.compression.progress_notices,
        context_length=config.model.context_length,
        hard_message_limit=config.compression.hygiene_hard_message_limit,
        max_message_chars=config.gateway.max_message_chars,
        model_missing=missing,
        tool_progress_dms=config.tool_progress.dms,
        tool_progress_groups=config.tool_progress.groups,
        admins=admins,
        group_errors=config.gateway.group_errors,
        silence_token=config.gateway.silence_token,
    )


def intake_settings(config: ChorusConfig) -> IntakeSettings:
    gw = config.gateway
    return IntakeSettings(
        profile=gw.profile,
        group_sessions_per_user=gw.group_sessions_per_user,
        group_trigger=gw.group_trigger,
        record_unmentioned=observes_unmentioned(
            observe_unmentioned=gw.observe_unmentioned, record_unmentioned=gw.record_unmentioned
        ),
        edits=gw.edits,
        unknown_sender=gw.unknown_sender,
        require_mention={name: getattr(config.platforms, name).require_mention for name in PLATFORM_FACTORIES},
        allow_bots=gw.allow_bots,
        bot_max_replies=gw.bot_loop_guard.max_replies,
        bot_window_seconds=gw.bot_loop_guard.window_seconds,
    )


def busy_rules(policy: ChatPolicy) -> BusyRules:
    """`chats."…".busy_input_mode`, else `gateway.busy_input_mode`; `gateway.collect_seconds`; all live."""

    def mode(chat_scope: str) -> BusyMode:
        chat = policy.chat(chat_scope)
        if chat is not None and chat.busy_input_mode is not None:
            return chat.busy_input_mode
        return policy.config.gateway.busy_input_mode

    return BusyRules(mode=mode, collect_seconds=lambda: policy.config.gateway.collect_seconds)


def loop_settings(config: ChorusConfig) -> LoopSettings:
    """A turn's limits: `gateway.max_iterations`, `compression.max_attempts`, `model.max_tokens`."""
    return LoopSettings(max_iterations=config.gateway.max_iterations, max_attempts=config.compression.max_attempts,
                        max_tokens=config.model.max_tokens)


def agent_factory(
    config: ChorusConfig, *, engine: Callable[[], ContextEngine], tools: Callable[[str], Sequence[Tool]],
    notes: NotesStore, chat_models: ChatModels, hub: McpHub, policy: ChatPolicy,
) -> AgentFactory:
    def chat_tools(route: Route) -> ToolSource | None:
        # Only the tools the chat admits are ever offered: the source filters before every request.
        return hub.for_chat(tool_access(policy.config, route).allowlist) if len(hub) else None

    def snapshot(chat: str) -> str:
        return notes.chat(chat).snapshot().text

    return AgentFactory(
        engine=engine,
        tools=tools,
        snapshot=snapshot,
        loop_settings=loop_settings(config),
        base_prompt=DEFAULT_BASE_PROMPT,
        persona=chat_models.persona,
        chat_model=chat_models.for_chat,
        tool_source=chat_tools,
    )


def review_hooks(
    config: ChorusConfig, client: ModelClient, tools: tuple[Tool, Tool], notes: NotesStore,
    admins: Mapping[str, frozenset[str]],
) -> ReviewHooks:
    """The background review after a delivered turn (memory and skill tools only)."""
    return ReviewHooks(
        BackgroundReviewer(model=client, tools=tools, memory=config.memory, skills=config.skills, notes=notes),
        admins=admins,
    )


def memory_screen(config: ChorusConfig) -> LlmScreen | None:
    """`memory.llm_screen`'s model (None when off)."""
    return build_llm_screen(config.memory.llm_screen, config.model, config.auxiliary)


def reviewed_while_on(hooks: ReviewHooks, policy: ChatPolicy, *, model_given: bool) -> PostTurnHook:
    """The background review after each turn while a model is configured (or given) and notes are on (both live)."""

    async def after_turn(turn: FinishedTurn) -> None:
        if (model_given or policy.config.model.name) and notes_on(policy.config.memory):
            await hooks.after_turn(turn)

    return after_turn


def replica_id() -> str:
    """This process's name among replicas (host, pid, a random part): owner of its leases, `service.instance.id`."""
    return f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def build_gateway(
    config: ChorusConfig,
    *,
    adapters: Mapping[str, PlatformAdapter] | None = None,
    model: ModelClient | None = None,
    engine: Callable[[], ContextEngine] | None = None,
    tools: Callable[[str], Sequence[Tool]] | None = None,
    coordinator: tuple[Coordinator, Outbox] | None = None,
    node: str | None = None,
    post_turn: PostTurnHook | None = None,
    providers: ProviderRegistry | None = None,
    bus: EventBus | None = None,
    model_engine: Callable[[ModelChoice], ContextEngine] | None = None,
    mcp: McpHub | None = None,
    windows: ModelWindows | None = None,
    limits_clock: Callable[[], float] | None = None,
    timers: Timers | None = None,
) -> Gateway:
    """A `Gateway` for `config`; keyword arguments replace parts (tests, benchmarks).

    `model_engine` builds the engine of a chat that switched to another model (default: the
    built-in engine sized for that model's window). `windows` is shared by the model chain and the
    engines (pass the one the `engine` factory reads; `Operations.windows` under `chorus run`).
    `limits_clock` is the spend limits' clock (default: `gateway.config.limits_clock()`).
    """
    home = config.home_dir
    check_engine(config)
    bus = bus or EventBus()
    node = node or replica_id()
    coord, outbox = coordinator or build_coordinator(config, node=node)
    stores = build_stores(config)
    journal, outbox = build_journal(config, stores, outbox, node=node)
    store, notes = stores.sessions, stores.notes
    windows = windows or model_windows(config)
    client = LiveModel(model or build_model(config, windows, observe=bus.publish))  # swapped when `model.*` changes
    missing = model_missing_text(config) if model is None else None
    # One dict shared by the gateway, delivery and media: a platform restarted after a config change replaces its entry.
    adapters = dict(adapters) if adapters is not None else leased_adapters(config, coord, node=node, banner=missing or "")
    memory_tool = MemoryTool(notes, memory_screen(config))
    skill_manage = SkillManageTool(stores.skills, staging=notes)  # the notes' approval gate and queue
    policy = ChatPolicy(config)
    clock = limits_clock or test_clock()
    scheduler = Scheduler(schedule_store(config, stores), config=lambda: policy.config, clock=clock, node=node,
                          dedup=coord.dedup)
    book = ScheduleBook(scheduler.store, config=lambda: policy.config, clock=clock)
    memory = MemoryManager.from_config(
        config.memory.provider,
        provider_registry(config, store, installed=providers, on_error=plugin_errors(bus)),
        on_error=plugin_errors(bus),
    )
    semantic = memory.provider if isinstance(memory.provider, SemanticMemory) else None
    tools = tools or builtin_tools(stores, memory_tool, skill_manage, schedule=ScheduleTool(book),
                                   scheduling_on=lambda: policy.config.scheduling.enabled, embedder=semantic)
    hub = mcp if mcp is not None else McpHub(config.mcp, observe=bus.publish)

    pairing, chats = stores.pairing, stores.chats
    clients = ModelClients(config, client)
    chat_models = ChatModels(
        policy=policy, chats=chats, main=client, clients=clients, engine=model_engine or chat_model_engine(policy),
    )

    factory = agent_factory(
        config, engine=engine or engine_factory(config, windows=windows, on_plugin_error=plugin_errors(bus)),
        tools=tools, notes=notes,
        chat_models=chat_models, hub=hub, policy=policy,
    )
    agents = AgentPool(
        store=store, cache=coord.agent_cache, model=client, factory=factory, owner=node,
        home=stores.identity, capacity=config.gateway.agent_cache_size, bus=bus,
        check_store=bool(config.redis.url) and isinstance(store, PostgresSessionStore),  # replicas share the store
    )
    deadletters = DeadLetterBox(home / "deadletter")
    # A live sender's claim outlasts a slow send; a dead sender's is freed by its heartbeat (gateway/shared/outbox.py).
    delivery = Delivery(
        adapters=adapters, outbox=outbox, owner=node, claim_ttl=max(config.gateway.lease_seconds, SEND_CLAIM_TTL),
        set_aside=deadletters,
    )
    admins = admins_by_platform(config.platforms)
    hooks = None
    if post_turn is None:
        hooks = review_hooks(config, client, (memory_tool, skill_manage), notes, admins)
        post_turn = reviewed_while_on(hooks, policy, model_given=model is not None)

    sessions = SessionService(
        agents=agents, store=store, lock=coord.lock, in_place=config.compression.in_place,
        lock_ttl=config.gateway.lease_seconds,
    )
    transcriber = build_transcriber(config)
    limits = build_spend_gate(config, policy=policy, bus=bus, clock=clock)
    home_channel = HomeChannel(lambda: policy.config, home=home, clock=clock)
    bus.subscribe(home_channel.on_event)
    entries = JournalEntries(journal, deadletters, bus)
    approvals = Approvals(
        approval_store(config, stores), config=lambda: policy.config, poster=DeliveryPoster(delivery),
        admins=lambda platform: admins_by_platform(policy.config.platforms).get(platform, frozenset()),
    )
    media = media_reader(config, adapters, transcriber)
    runner = TurnRunner(
        sessions=sessions, delivery=delivery, entries=entries,
        settings=turn_settings(config, missing=missing is not None, admins=admins),
        post_turn=post_turn,
        memory=memory if config.memory.provider else None,
        bus=bus,
        media=media,
        chats=chats,
        store_writes=StoreWrites(store.location),
        limits=limits,
        approvals=approvals,
        notes=notes,
        reactions=Reactions(delivery, lambda: policy.config.gateway.reactions),
    )
    gw = config.gateway
    dedup = JournalCheckedDeduplicator(coord.dedup, journal) if isinstance(journal, SharedJournal) else coord.dedup
    intake = Intake(
        dedup=dedup, rules=access_rules(config), settings=intake_settings(config), policy=policy, pairing=pairing,
        bot_guard=BotLoopGuard(coord.counter), bus=bus,
    )

    def notes_text(chat: str) -> str:
        return notes.chat(chat).snapshot().text

    async def on_shutdown() -> None:
        if hooks is not None:
            await hooks.flush(timeout=max(1.0, config.gateway.shutdown_grace_seconds))
        await runner.close()

    closers: tuple[Callable[[], Awaitable[None]], ...] = (
        client.close, clients.close, memory_tool.close, *((transcriber.close,) if transcriber is not None else ()),
    )
    commands = ChatCommands(
        sessions=sessions, store=store, chats=chats, policy=policy, current_model=chat_models.current, limits=limits,
    )
    return Gateway(GatewayParts(
        coordinator=coord, store=store, adapters=adapters, agents=agents, sessions=sessions, bus=bus, runner=runner,
        delivery=delivery, intake=intake, entries=entries, outbox=outbox, busy_mode=gw.busy_input_mode,
        shutdown_grace=gw.shutdown_grace_seconds, notes_text=notes_text, on_shutdown=on_shutdown, closers=closers,
        policy=policy, chats=chats, chat_commands=commands, pairing=pairing,
        resources=(limits, approvals, hub), limits=limits,  # the hub runs even empty: servers may be added live
        approvals=ApprovalDesk(approvals, DeliveryPoster(delivery)),
        mcp=hub, windows=windows, notes=notes,
        busy_rules=busy_rules(policy), timers=timers,
        plugins=ActivePlugins(context_engine=config.context.engine, memory_provider=config.memory.provider),
        scheduler=scheduler, schedules=book, home=home_channel,
        rebuild=Rebuilders(
            model=client, clients=clients, windows=windows,
            model_chain=model_chain(model, windows, observe=bus.publish),
            adapter=lambda new, name: leased_adapter(new, name, coord, node=node, banner=model_missing_text(new) or ""),
            loop_settings=loop_settings, intake_settings=intake_settings,
            turn_settings=lambda new: turn_settings(new, missing=model is None and not new.model.name,
                                                    admins=admins_by_platform(new.platforms)),
            media=media, media_settings=media_settings, transcriber=build_transcriber, notes=notes,
            review=hooks, memory_tool=memory_tool, memory_screen=memory_screen,
        ),
    ))


__all__ = [  # the adapter builders are re-exported: callers import them from here
    "ADAPTER_NAMES", "MODEL_MISSING_TEXT", "PLATFORM_FACTORIES", "access_rules", "attachment_sources", "build_adapter",
    "build_adapters", "build_coordinator", "build_gateway", "build_journal", "build_model", "check_engine",
    "command_menu", "engine_factory", "leased_adapter", "leased_adapters", "listener_limits", "loop_settings",
    "model_windows", "plugin_errors", "replica_id",
]
