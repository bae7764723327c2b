"""The running configuration: one holder the gateway reads limits through, changed without a restart.

Owns `LiveConfig` (`current()`, `update(changes)`, `reload(path)`, subscribers),
the one table of keys only a restart applies (`RESTART_KEYS`, asked through
`restart_needed(key)`; every other key is live: `LIVE_KEYS`), the audit line
`admin.config_changed` (fields `setting`, `old`, `new`, `who`; not `key`, which
the log redactor hides), and `install_sighup`. Saving a change back to the
file is `gateway.admin.config_file`'s job. Every change is validated
by the same pydantic models as the config file; an invalid change or file is
rejected whole, naming the key, and the running config is kept.

Knows nothing of HTTP, agents or sessions: the admin API calls `update`, the
gateway subscribes to apply what changed (the next message sees it).
"""
from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import structlog
from pydantic import BaseModel, SecretStr, ValidationError

from chorus_errors import ConfigError
from gateway.config import ChorusConfig, describe_validation_error, did_you_mean, load_config
from gateway.ops.events import ConfigChanged, EventBus

log = structlog.get_logger(__name__)

# The keys only a restart applies, each with why (a dotted key, or a section: every key under it). Every other
# key of the schema is live: `gateway/live_parts.py` names the running part that follows each one. Kept minimal:
# what binds a socket, opens a store or names where coordination itself lives.
RESTART_KEYS: Mapping[str, str] = MappingProxyType({
    "home": "the home directory holds the open stores, journals and lock files",
    "store.url": "the session store is opened at start",
    "redis.url": "coordination, locks and this config sync itself run over it",
    "redis.key_prefix": "every replica must agree on it while they run",
    "admin.host": "the admin listener binds at start",
    "admin.port": "the admin listener binds at start",
    "admin.token": "it guards the API that would change it",
    "platforms.web.host": "the web chat's listener binds at start",
    "platforms.web.port": "the web chat's listener binds at start",
    "platforms.telegram.webhook.listen": "the webhook listener binds at start",
    "platforms.telegram.webhook.port": "the webhook listener binds at start",
    "platforms.slack.path": "the events route is added to the admin listener at start",
    "gateway.lease_seconds": "replicas' heartbeats and session locks agree on it at start",
    "gateway.read_timeout_seconds": "set on each listener when it binds",
    "gateway.max_connections": "set on each listener when it binds",
    "logging": "the log pipeline is set up before the first line",
    "memory.provider": "a memory plugin is loaded and checked once, at start",
    "context.engine": "a context-engine plugin is loaded and checked once, at start",
    "memory.embeddings": "the semantic provider's client is made with the provider, at start",
    "telemetry": "a process's tracer provider is installed once, at start",
})
RESTART_NOTE = "edit the config file and restart chorus"


def restart_needed(key: str) -> bool:
    """True when only a restart applies `key` (a dotted key such as `admin.port`); the dashboard editor asks this."""
    return restart_reason(key) is not None


def restart_reason(key: str) -> str | None:
    """Why `key` needs a restart (None: it is live)."""
    for entry, why in RESTART_KEYS.items():
        if key == entry or key.startswith(f"{entry}."):
            return why
    return None


def restart_text(keys: Iterable[str]) -> str:
    """`restart needed: KEY (why); …` for the keys given: the answer of a PATCH or reload that names them."""
    return "; ".join(f"restart needed: {key} ({restart_reason(key)})" for key in keys)


Subscriber = Callable[[ChorusConfig, ChorusConfig], None]


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One key that changed: its dotted name, old and new value (secrets shown as <hidden>)."""

    key: str
    old: object
    new: object


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """What `update` or `reload` did."""

    config: ChorusConfig
    changes: tuple[KeyChange, ...]
    restart_required: tuple[str, ...] = ()  # changed in the file, but only a restart applies them
    runtime_kept: tuple[str, ...] = ()  # set at runtime and unchanged in the file: the runtime value stays


def flatten(model: BaseModel, prefix: str = "") -> dict[str, object]:
    """Every leaf of a config tree by dotted key (dicts such as model_thresholds are leaves)."""
    out: dict[str, object] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        key = f"{prefix}{info.alias or name}"  # `limits.global`, not the attribute's `global_`
        if isinstance(value, BaseModel):
            out.update(flatten(value, f"{key}."))
        else:
            out[key] = value
    return out


# Every key of the schema a change applies to without a restart (computed from the schema, so a new key is live
# unless RESTART_KEYS names it, and `tests/gateway/test_live_parts.py` fails until a part follows it).
LIVE_KEYS: frozenset[str] = frozenset(key for key in flatten(ChorusConfig()) if not restart_needed(key))


def shown(value: object) -> object:
    """A JSON-able value for logs and responses; secrets never appear."""
    if isinstance(value, SecretStr):
        return "<hidden>"
    if isinstance(value, BaseModel):
        return shown(value.model_dump(mode="python", exclude_none=True))
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown(v) for v in value]
    return value


def diff(old: ChorusConfig, new: ChorusConfig) -> tuple[KeyChange, ...]:
    """The leaves that differ between two configs, in key order."""
    before, after = flatten(old), flatten(new)
    return tuple(
        KeyChange(key, shown(before[key]), shown(after[key])) for key in sorted(after) if before[key] != after[key]
    )


def set_dotted(tree: dict[str, Any], changes: Mapping[str, object]) -> None:
    """Put each dotted key's value into a dumped config tree (its sections exist: the keys were checked)."""
    for key, value in changes.items():
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value


def _with_changes(config: ChorusConfig, changes: Mapping[str, object]) -> ChorusConfig:
    """`config` with dotted keys replaced, validated by the config models (ConfigError names the key)."""
    known = flatten(config)
    tree: dict[str, Any] = config.model_dump(mode="python", by_alias=True)
    for key in changes:
        if key not in known:
            hint = did_you_mean(key, known) or "; GET /api/config lists the live keys"
            raise ConfigError(f"{key}: unknown key{hint}", key=key)
    if restart := [key for key in changes if restart_needed(key)]:
        raise ConfigError(f"{restart_text(restart)}; {RESTART_NOTE}", key=restart[0])
    set_dotted(tree, changes)
    try:
        return ChorusConfig.model_validate(tree)
    except ValidationError as exc:
        first = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise ConfigError(describe_validation_error(exc, "change"), key=first) from None


class LiveConfig:
    """Holds the running `ChorusConfig`; readers call `current()` each time they need a limit.

    Args:
        config: the config the process started with.
        path: the file it was loaded from (None: built-in defaults; nothing to save or reload).
    """

    def __init__(self, config: ChorusConfig, *, path: Path | None = None, bus: EventBus | None = None) -> None:
        self.bus = bus or EventBus()  # each changed key is published as a `ConfigChanged`
        self._config = config
        self._from_file = config  # what the file said at the last load: a reload applies only what it changed
        self._set_at_runtime: set[str] = set()
        self.path = path
        self.version = 0
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()

    def current(self) -> ChorusConfig:
        """The config in force now."""
        return self._config

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call `subscriber(old, new)` after every change; returns the unsubscribe function."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def update(self, changes: Mapping[str, object], *, who: str = "unknown") -> ConfigChange:
        """Apply runtime changes of `LIVE_KEYS` (all or none).

        Raises:
            ConfigError: an unknown key, a key that needs a restart ("restart needed: KEY (why)" for each), or an
                invalid value
                (the message names the key, the value and what is allowed; `.key` is set).
        """
        if not changes:
            raise ConfigError("no changes given; send a JSON object such as {\"compression.threshold\": 0.6}")
        with self._lock:
            new = _with_changes(self._config, changes)
            result = self._swap(new, who=who)
            self._set_at_runtime.update(c.key for c in result.changes)
            return result

    def preview(self, changes: Mapping[str, object]) -> ChorusConfig:
        """The config `update(changes)` would produce, without applying it (same errors)."""
        if not changes:
            raise ConfigError("no changes given; send a JSON object such as {\"compression.threshold\": 0.6}")
        return _with_changes(self._config, changes)

    def reload(self, path: Path | None = None, *, who: str = "reload") -> ConfigChange:
        """Re-read the config file; the keys of `LIVE_KEYS` take effect, others are reported.

        Raises:
            ConfigError: the file is unreadable or invalid (the running config is kept).
        """
        source = path or self.path
        if source is None:
            raise ConfigError("no config file was loaded (built-in defaults); start with --config FILE to reload")
        loaded = load_config(source)
        with self._lock:
            running, edited = self._config, {c.key for c in diff(self._from_file, loaded)}
            differing = [c.key for c in diff(running, loaded)]
            # A key the file did not change keeps a value set at runtime (PATCH); one it changed takes the file's.
            live = {key: flatten(loaded)[key] for key in differing if key in LIVE_KEYS and key in edited}
            kept = tuple(key for key in differing if key in LIVE_KEYS and key not in edited)
            replaced = sorted(self._set_at_runtime & live.keys())
            restart = tuple(key for key in differing if key not in LIVE_KEYS)
            new = _with_changes(running, live) if live else running
            result = self._swap(new, who=who)
            self._from_file = loaded
            self._set_at_runtime -= live.keys()
        if restart:
            log.warning("config.restart_required", settings=list(restart), note=f"{restart_text(restart)}; {RESTART_NOTE}",
                        who=who, kept="the running value")  # "settings", not "keys": the redactor hides "keys"
        if kept:
            log.warning("config.runtime_kept", settings=list(kept), who=who,
                        note="set at runtime and unchanged in the file: the runtime value stays until the file changes it")
        if replaced:
            log.warning("config.runtime_replaced", settings=replaced, who=who,
                        note="set at runtime, now replaced by the value the file was changed to")
        log.info("config.reloaded", path=str(source), changed=[c.key for c in result.changes], who=who)
        return ConfigChange(result.config, result.changes, restart, kept)

    def _swap(self, new: ChorusConfig, *, who: str) -> ConfigChange:
        old = self._config
        changes = diff(old, new)
        if not changes:
            return ConfigChange(old, ())
        self._config = new
        self.version += 1
        for change in changes:
            log.info("admin.config_changed", setting=change.key, old=change.old, new=change.new, who=who)
            self.bus.publish(ConfigChanged(change.key, change.old, change.new, who))
        for subscriber in list(self._subscribers):
            try:
                subscriber(old, new)
            except Exception as exc:  # noqa: BLE001 - one failing reader must not undo a validated change
                log.exception("config.subscriber_failed", error=type(exc).__name__)
        return ConfigChange(new, changes)


def live_values(config: ChorusConfig, keys: Iterable[str] = LIVE_KEYS) -> dict[str, object]:
    """The runtime-tunable values of `config` by dotted key (JSON-able)."""
    flat = flatten(config)
    return {key: shown(flat[key]) for key in sorted(keys)}


def install_sighup(
    loop: asyncio.AbstractEventLoop,
    live: LiveConfig,
    path: Path | None = None,
    *,
    on_done: Callable[[ConfigChange | None], None] | None = None,
) -> Callable[[], None]:
    """Reload the config file on SIGHUP; an invalid file is logged (naming the key) and ignored.

    Args:
        loop: the running loop (the handler runs on it).
        live: the holder to reload.
        path: the file (default: the one `live` was loaded from).
        on_done: told the outcome of each reload (None: rejected).

    Returns:
        A function that removes the handler.
    """

    def on_hup() -> None:
        outcome = reload_logged(live, path, who="sighup")
        if on_done is not None:
            on_done(outcome)

    loop.add_signal_handler(signal.SIGHUP, on_hup)

    def remove() -> None:
        loop.remove_signal_handler(signal.SIGHUP)

    return remove


def reload_logged(live: LiveConfig, path: Path | None, *, who: str) -> ConfigChange | None:
    """`live.reload(path)`, logging a rejected file instead of raising (the running config is kept)."""
    try:
        return live.reload(path, who=who)
    except ConfigError as exc:
        log.error("config.reload_rejected", setting=exc.key, error=str(exc), who=who, kept="running config")
        return None


__all__ = [
    "LIVE_KEYS",
    "RESTART_KEYS",
    "RESTART_NOTE",
    "ConfigChange",
    "KeyChange",
    "LiveConfig",
    "diff",
    "flatten",
    "install_sighup",
    "live_values",
    "reload_logged",
    "restart_needed",
    "restart_reason",
    "restart_text",
    "shown",
]
