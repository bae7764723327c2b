"""Every live key reaches the running part that uses it: one table of followers, one `LiveConfig` subscriber.

Owns `FOLLOWERS` (for each running part: the keys it follows and how a change is applied, or None
when the part reads the running config at use), `follow(live, gateway)` (the one subscriber: after
a change from SIGHUP, `POST /api/config/reload`, `PATCH /api/config` or another replica, each
follower whose keys changed is applied; one that needs I/O, such as restarting an adapter or the
MCP servers, runs as a task on the loop) and `unfollowed()` (live keys no follower names: a test
keeps it empty, so a key added to the schema is either followed here or listed in
`gateway.ops.live_config.RESTART_KEYS`). Knows how parts are remade only through `Rebuilders`.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial

import structlog
from pydantic import SecretStr

from gateway.app import Gateway
from gateway.chats.provenance import admins_by_platform
from gateway.config import ChorusConfig
from gateway.ops.live_config import LIVE_KEYS, LiveConfig, diff, flatten
from gateway.platforms.adapters import ADAPTER_NAMES
from gateway.rebuild import Rebuilders

log = structlog.get_logger(__name__)

# The keys of a platform the chat policy reads at use (who may talk, who is admin): no adapter restart for these.
ACCESS_KEYS = frozenset(("allowed_users", "allowed_chats", "allow_all_users", "require_mention", "admins", "pairing"))
PLATFORMS = ("telegram", "discord", "slack")
MIN_SECRET_CHARS = 4  # shorter "secrets" would blank out ordinary words

Apply = Callable[[Gateway, Rebuilders, ChorusConfig, ChorusConfig], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class Follower:
    """One running part and the keys it follows (a dotted key, or a section: every key under it)."""

    part: str
    keys: tuple[str, ...]
    apply: Apply | None = None  # None: the part reads the running config (ChatPolicy or LiveConfig) at each use

    def follows(self, key: str) -> bool:
        return any(key == mine or key.startswith(f"{mine}.") for mine in self.keys)


def _policy(gateway: Gateway, _rebuild: Rebuilders, _old: ChorusConfig, new: ChorusConfig) -> None:
    if gateway.parts.policy is not None:
        gateway.parts.policy.update(new)


def _intake(gateway: Gateway, rebuild: Rebuilders, _old: ChorusConfig, new: ChorusConfig) -> None:
    gateway.parts.intake.settings = rebuild.intake_settings(new)


def _turns(gateway: Gateway, rebuild: Rebuilders, _old: ChorusConfig, new: ChorusConfig) -> None:
    gateway.parts.runner.settings = rebuild.turn_settings(new)
    gateway.parts.sessions.in_place = new.compression.in_place


def _agents(gateway: Gateway, rebuild: Rebuilders, old: ChorusConfig, new: ChorusConfig) -> None:
    """The main model chain, the chats' other models and each new agent's limits; live agents are rebuilt."""
    if (old.model, old.agent.strip_reasoning) != (new.model, new.agent.strip_reasoning):
        rebuild.model.replace(rebuild.model_chain(new))
        rebuild.clients.follow(new, rebuild.model)
    gateway.parts.agents.follow(rebuild.loop_settings(new))


def _agent_cache(gateway: Gateway, _rebuild: Rebuilders, _old: ChorusConfig, new: ChorusConfig) -> None:
    gateway.parts.agents.capacity = new.gateway.agent_cache_size


def _media(_gateway: Gateway, rebuild: Rebuilders, _old: ChorusConfig, new: ChorusConfig) -> Awaitable[None] | None:
    if rebuild.media is None:
        return None
    replaced = rebuild.media.follow(rebuild.media_settings(new), rebuild.transcriber(new))
    return replaced.close() if replaced is not None and hasattr(replaced, "close") else None


def _memory(_gateway: Gateway, rebuild: Rebuilders, old: ChorusConfig, new: ChorusConfig) -> Awaitable[None] | None:
    """Notes' limits and switches, review intervals and trusted admins; the write screen's model if it changed."""
    rebuild.notes.settings = new.memory
    if rebuild.review is not None:
        rebuild.review.reviewer.follow(new.memory, new.skills)
        rebuild.review.follow(admins_by_platform(new.platforms))
    if (old.memory.llm_screen, old.model, old.auxiliary) == (new.memory.llm_screen, new.model, new.auxiliary):
        return None
    replaced = rebuild.memory_tool.follow(rebuild.memory_screen(new))
    return replaced.close() if replaced is not None else None


def _grace(gateway: Gateway, _rebuild: Rebuilders, _old: ChorusConfig, new: ChorusConfig) -> None:
    gateway.shutdown_grace = new.gateway.shutdown_grace_seconds


async def _mcp(gateway: Gateway, rebuild: Rebuilders, old: ChorusConfig, new: ChorusConfig) -> None:
    if gateway.parts.mcp is not None and old.mcp != new.mcp:
        await gateway.parts.mcp.reconfigure(new.mcp)
        gateway.parts.agents.follow(rebuild.loop_settings(new))  # agents built without MCP tools get them


def adapter_view(config: ChorusConfig, name: str) -> object:
    """What platform `name`'s adapter is built from (its keys but the access lists, which the policy reads)."""
    platforms = config.platforms
    if name == "console":
        return platforms.console
    settings = getattr(platforms, name)
    view = settings.model_dump(exclude=set(ACCESS_KEYS) & set(type(settings).model_fields))
    if name == "telegram":
        view["max_attachment_bytes"] = config.gateway.max_attachment_bytes
    return view


def redactor(config: ChorusConfig) -> Callable[[str], str]:
    """Hides every secret of `config` in a text (an error a platform library raised may quote its token)."""
    secrets = sorted({value.get_secret_value() for value in flatten(config).values()
                      if isinstance(value, SecretStr) and len(value.get_secret_value()) >= MIN_SECRET_CHARS},
                     key=len, reverse=True)

    def redact(text: str) -> str:
        for secret in secrets:
            text = text.replace(secret, "<hidden>")
        return text

    return redact


async def _adapters(gateway: Gateway, rebuild: Rebuilders, old: ChorusConfig, new: ChorusConfig) -> None:
    """Restart just the platforms whose keys changed (a new token, `enabled` flipped, a new base URL)."""
    for name in ADAPTER_NAMES:
        if adapter_view(old, name) != adapter_view(new, name):
            log.info("adapter.restarting", platform=name, reason="config changed")
            await gateway.restart_adapter(name, partial(rebuild.adapter, new, name), redact=redactor(new))


FOLLOWERS: tuple[Follower, ...] = (
    # Read at use through ChatPolicy (persona, per-chat settings, access lists, busy mode, bots, reactions,
    # approvals, spend limits and prices, `/model` choices, the bot's language; the scheduler, the `schedule`
    # tool and the home channel read `policy.config` each tick): applied by handing it the new config.
    Follower("chat policy", (
        "agent.system_prompt", "agent.system_prompt_file", "chats", "model.allowed", "tools", "limits", "pricing",
        "schedules", "scheduling", "gateway.home_channel", "gateway.language",
        *(f"platforms.{name}.{key}" for name in PLATFORMS for key in sorted(ACCESS_KEYS)),
        *(f"gateway.{key}" for key in ("busy_input_mode", "collect_seconds", "group_sessions_per_user",
                                       "record_unmentioned", "observe_unmentioned", "edits", "usage_footer",
                                       "allow_bots", "bot_loop_guard", "reactions")),
    ), _policy),
    Follower("intake", ("gateway.profile", "gateway.group_trigger", "gateway.unknown_sender", "gateway.edits",
                        "gateway.group_sessions_per_user", "gateway.allow_bots", "gateway.bot_loop_guard",
                        "gateway.record_unmentioned", "gateway.observe_unmentioned",
                        *(f"platforms.{name}.require_mention" for name in PLATFORMS)), _intake),
    Follower("turn runner", (
        "compression.in_place", "compression.progress_notices", "compression.hygiene_hard_message_limit",
        "model.name", "model.context_length", "gateway.max_message_chars", "gateway.group_errors",
        "gateway.silence_token", "tool_progress", *(f"platforms.{name}.admins" for name in PLATFORMS),
    ), _turns),
    # Each agent's LiveEngine rebuilds its engine (and the summariser) from the running config when it changed.
    Follower("context engines", ("compression", "context", "auxiliary", "model")),
    Follower("model and agents", ("model", "agent.strip_reasoning", "gateway.max_iterations",
                                  "compression.max_attempts"), _agents),
    Follower("agent cache", ("gateway.agent_cache_size",), _agent_cache),
    Follower("attachments", ("model.vision", "gateway.max_attachment_bytes", "gateway.max_text_file_bytes",
                             "transcription", "model.base_url", "model.api_key", "model.timeout_seconds"), _media),
    Follower("memory and review", ("memory", "skills", "model", "auxiliary",
                                   *(f"platforms.{name}.admins" for name in PLATFORMS)), _memory),
    Follower("shutdown", ("gateway.shutdown_grace_seconds",), _grace),
    Follower("MCP servers", ("mcp",), _mcp),
    Follower("adapters", ("platforms", "gateway.max_attachment_bytes"), _adapters),
)


def unfollowed(keys: Iterable[str] = LIVE_KEYS) -> list[str]:
    """The live keys no follower names (each must be followed, or listed in RESTART_KEYS)."""
    return sorted(key for key in keys if not any(f.follows(key) for f in FOLLOWERS))


def follow(live: LiveConfig, gateway: Gateway) -> Callable[[], None]:
    """Apply each change of `live` to `gateway`'s running parts from now on; returns the unsubscribe function."""
    rebuild = gateway.parts.rebuild
    tasks: set[asyncio.Task[None]] = set()

    def apply(old: ChorusConfig, new: ChorusConfig) -> None:
        changed = [change.key for change in diff(old, new)]
        for follower in FOLLOWERS:
            if follower.apply is None or not any(follower.follows(key) for key in changed):
                continue
            if rebuild is None and follower.apply is not _policy:
                continue  # a gateway built without rebuilders (tests with hand-made parts): the policy only
            try:
                pending = follower.apply(gateway, rebuild, old, new)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - one part failing to follow must not stop the others
                log.error("config.follow_failed", part=follower.part, error=type(exc).__name__)
                continue
            if pending is not None:
                _schedule(tasks, follower.part, pending)

    if gateway.parts.policy is not None:
        gateway.parts.policy.update(live.current())
    return live.subscribe(apply)


def _schedule(tasks: set[asyncio.Task[None]], part: str, pending: Awaitable[None]) -> None:
    """Run a follower's I/O on the loop the change arrived on (every source of changes runs on it)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # changed outside the loop (a test calling update directly): nothing running to restart
        if asyncio.iscoroutine(pending):
            pending.close()
        return
    task = loop.create_task(_logged(part, pending))
    tasks.add(task)
    task.add_done_callback(tasks.discard)


async def _logged(part: str, pending: Awaitable[None]) -> None:
    try:
        await pending
    except Exception as exc:  # noqa: BLE001 - reported, the gateway keeps running
        log.error("config.follow_failed", part=part, error=type(exc).__name__)


__all__ = ["ACCESS_KEYS", "FOLLOWERS", "Follower", "adapter_view", "follow", "redactor", "unfollowed"]
