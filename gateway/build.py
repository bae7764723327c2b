"""Composition root: from a `ChorusConfig` to a ready-to-start `Gateway` (no I/O here).

Owns `build_gateway` and the few choices it makes: the coordinator (Redis or
embedded; the embedded outbox is journaled to `<home>/outbox.jsonl` so a
restart resends what was never acknowledged), the session store under home,
the model client, the context engine per agent, the agent tools, the notes
snapshot, and the adapters (web, console, and the platform factories in
`gateway/platforms/`). Secrets are unwrapped here and handed on as plain
arguments, never logged.
"""
from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import Callable, Mapping, Sequence

import structlog

from adapters.base import PlatformAdapter
from adapters.console import ConsoleAdapter
from adapters.web import WebAdapter
from agent.context._summarizer import Summarizer
from agent.context.engine import ContextEngine
from agent.context.factory import build_compressor, build_engine, build_summarizer
from agent.context.user_words import handoff_sections
from agent.loop import LoopSettings
from agent.memory.notes import NotesStore
from agent.memory.providers import MemoryManager, ProviderRegistry
from agent.memory.scanner import scan
from agent.model_client import ModelClient, OpenAIModelClient
from agent.prompt import DEFAULT_BASE_PROMPT
from agent.review import BackgroundReviewer
from agent.skills.library import SkillLibrary
from agent.store import STATE_DB_NAME, SessionStore
from agent.tokens import default_counter
from agent.tools.base import Tool
from agent.tools.memory_tool import MemoryTool
from agent.tools.session_search import SessionSearchTool
from agent.tools.skills import SkillManageTool, SkillViewTool
from gateway.agents import AgentFactory, AgentPool
from gateway.allowlist import AccessRules
from gateway.app import Gateway, GatewayParts
from gateway.config import ChorusConfig
from gateway.coord import Coordinator, memory_coordinator, poller_lease_name, redis_coordinator
from gateway.coord.base import Outbox
from gateway.delivery import Delivery
from gateway.intake import Intake, IntakeSettings
from gateway.journal import InboundJournal
from gateway.outbox_file import JournaledOutbox
from gateway.poller import LeasedAdapter
from gateway.provenance import admins_by_platform
from gateway.review import ReviewHooks
from gateway.turns import PostTurnHook, TurnRunner, TurnSettings

log = structlog.get_logger(__name__)

MODEL_MISSING_TEXT = (
    "No model is configured yet. Set model.name, model.base_url and model.api_key "
    "(or export OPENAI_API_KEY and use api_key: ${OPENAI_API_KEY}) in config.yaml, then restart chorus run."
)
PLATFORM_FACTORIES = {"telegram": "build_telegram", "discord": "build_discord", "slack": "build_slack"}


def model_missing_text(config: ChorusConfig) -> str | None:
    return MODEL_MISSING_TEXT if not config.model.name else None


def build_coordinator(config: ChorusConfig, *, node: str) -> tuple[Coordinator, Outbox]:
    """The coordinator and the outbox the gateway records replies in."""
    size = config.gateway.agent_cache_size
    if config.redis.url:
        coord = redis_coordinator(config.redis.url, prefix=config.redis.key_prefix, agent_cache_size=size, node=node)
        return coord, coord.outbox
    coord = memory_coordinator(agent_cache_size=size, node=node)
    return coord, JournaledOutbox(coord.outbox, config.home_dir / "outbox.jsonl")


def build_model(config: ChorusConfig) -> OpenAIModelClient:
    model = config.model
    return OpenAIModelClient(
        model=model.name,
        base_url=model.base_url,
        api_key=model.api_key.get_secret_value() if model.api_key else None,
        timeout_seconds=model.timeout_seconds,
    )


def engine_factory(config: ChorusConfig, *, summarizer: Summarizer | None = None) -> Callable[[], ContextEngine]:
    """A new context engine per agent; the built-in one shares one summariser."""
    counter = default_counter()
    sections = handoff_sections(config.compression)
    if config.context.engine != "compressor":
        return lambda: build_engine(
            config.context, config.compression, config.model, config.auxiliary, counter=counter, sections=sections
        )
    shared = summarizer if summarizer is not None else build_summarizer(config.model, config.auxiliary)
    return lambda: build_compressor(
        config.compression, config.model, config.auxiliary, counter=counter, sections=sections, summarizer=shared
    )


def build_adapters(config: ChorusConfig, *, banner: str = "") -> dict[str, PlatformAdapter]:
    """Every enabled adapter by platform name (ConfigError names a missing key)."""
    adapters: dict[str, PlatformAdapter] = {}
    platforms = config.platforms
    if platforms.web.enabled:
        adapters["web"] = WebAdapter(host=platforms.web.host, port=platforms.web.port, banner=banner)
    if platforms.console:
        adapters["console"] = ConsoleAdapter()
    for name, factory_name in PLATFORM_FACTORIES.items():
        settings = getattr(platforms, name)
        if not settings.enabled:
            continue
        module = importlib.import_module(f"gateway.platforms.{name}")
        adapters[name] = getattr(module, factory_name)(settings)
    return adapters


def access_rules(config: ChorusConfig) -> dict[str, AccessRules]:
    rules = {"web": AccessRules.of("web"), "console": AccessRules.of("console")}
    for name in PLATFORM_FACTORIES:
        settings = getattr(config.platforms, name)
        rules[name] = AccessRules.of(
            name,
            allowed_users=settings.allowed_users,
            allowed_chats=settings.allowed_chats,
            allow_all_users=settings.allow_all_users,
        )
    return rules


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
) -> Gateway:
    """A `Gateway` for `config`; keyword arguments replace parts (tests, benchmarks)."""
    home = config.home_dir
    node = node or f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    coord, outbox = coordinator or build_coordinator(config, node=node)
    store = SessionStore(home / STATE_DB_NAME)
    client = model or build_model(config)
    notes = NotesStore(home, config.memory)
    missing = model_missing_text(config) if model is None else None
    if adapters is None:
        adapters = build_adapters(config, banner=missing or "")
        telegram = config.platforms.telegram
        if "telegram" in adapters and telegram.mode == "polling" and telegram.token is not None:
            # Two pollers of one token conflict: only the lease holder polls.
            adapters["telegram"] = LeasedAdapter(
                adapters["telegram"], lease=coord.poller_lease, owner=node,
                name=poller_lease_name("telegram", telegram.token.get_secret_value()),
            )
    memory_tool = MemoryTool(notes)
    skills = SkillLibrary(home / "skills", scanner=scan)
    skill_manage = SkillManageTool(skills)
    notes_on = config.memory.memory_enabled or config.memory.user_profile_enabled
    if tools is None:
        agent_tools: tuple[Tool, ...] = (
            *((memory_tool,) if notes_on else ()), SessionSearchTool(store), SkillViewTool(skills), skill_manage,
        )

        def default_tools(_chat: str) -> Sequence[Tool]:
            return agent_tools

        tools = default_tools
    memory = MemoryManager.from_config(config.memory.provider, providers or ProviderRegistry())

    def snapshot(chat: str) -> str:
        return notes.chat(chat).snapshot().text

    factory = AgentFactory(
        engine=engine or engine_factory(config),
        tools=tools,
        snapshot=snapshot,
        loop_settings=LoopSettings(
            max_iterations=config.gateway.max_iterations,
            max_attempts=config.compression.max_attempts,
            max_tokens=config.model.max_tokens,
        ),
        base_prompt=DEFAULT_BASE_PROMPT,
    )
    agents = AgentPool(
        store=store, cache=coord.agent_cache, model=client, factory=factory, owner=node,
        home=str(home), capacity=config.gateway.agent_cache_size,
    )
    delivery = Delivery(adapters=adapters, outbox=outbox, owner=node)
    journal = InboundJournal(home / "inflight", node=node)
    hooks: ReviewHooks | None = None
    admins = admins_by_platform(config.platforms)
    if post_turn is None and missing is None and notes_on:
        hooks = ReviewHooks(
            BackgroundReviewer(
                model=client, tools=(memory_tool, skill_manage), memory=config.memory, skills=config.skills,
                notes=notes,
            ),
            admins=admins,
        )
        post_turn = hooks.after_turn

    runner = TurnRunner(
        agents=agents, store=store, lock=coord.lock, delivery=delivery, journal=journal,
        settings=TurnSettings(
            in_place=config.compression.in_place,
            progress_notices=config.compression.progress_notices,
            context_length=config.model.context_length,
            hard_message_limit=config.compression.hygiene_hard_message_limit,
            max_message_chars=config.gateway.max_message_chars,
            model_missing_text=missing,
            admins=admins,
        ),
        post_turn=post_turn,
        memory=memory if config.memory.provider else None,
    )
    gw = config.gateway
    intake = Intake(
        dedup=coord.dedup,
        rules=access_rules(config),
        settings=IntakeSettings(
            profile=gw.profile,
            group_sessions_per_user=gw.group_sessions_per_user,
            group_trigger=gw.group_trigger,
            record_unmentioned=gw.record_unmentioned,
            unknown_sender=gw.unknown_sender,
            require_mention={name: getattr(config.platforms, name).require_mention for name in PLATFORM_FACTORIES},
        ),
    )

    def notes_text(chat: str) -> str:
        text = notes.chat(chat).snapshot().text
        return text or "I have no notes about this chat yet."

    async def on_shutdown() -> None:
        if hooks is not None:
            await hooks.flush(timeout=max(1.0, config.gateway.shutdown_grace_seconds))
        await runner.close()

    closers = (client.close,) if isinstance(client, OpenAIModelClient) else ()
    return Gateway(
        GatewayParts(
            coordinator=coord, store=store, adapters=adapters, agents=agents, runner=runner, delivery=delivery,
            intake=intake, journal=journal, outbox=outbox, busy_mode=gw.busy_input_mode,
            shutdown_grace=gw.shutdown_grace_seconds, notes_text=notes_text, on_shutdown=on_shutdown,
            closers=closers,
        )
    )


__all__ = ["MODEL_MISSING_TEXT", "build_adapters", "build_coordinator", "build_gateway", "engine_factory"]

