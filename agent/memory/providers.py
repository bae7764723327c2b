"""External memory providers (Honcho, Mem0, …): the plugin base class, a registry, and the manager.

Owns `MemoryProvider` (prefetch before a turn, sync after it, shutdown),
`ProviderRegistry` (name → factory; `memory.provider` picks one; `installed()`
fills it from the `chorus.memory_providers` entry points) and
`MemoryManager`, which runs at most one provider beside the built-in notes.
The manager isolates the turn from the provider: every call has a timeout,
every failure is logged and swallowed (prefetch then returns None), and after
repeated failures the provider is rested for a while instead of slowing every
turn. Knows nothing of notes files, tools or platforms.
"""
from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import structlog

from agent.messages import Message
from agent.plugins import MEMORY_PROVIDERS, PluginErrorSink, installed_names, load_plugin
from chorus_errors import ConfigError

log = structlog.get_logger(__name__)

PREFETCH_TIMEOUT_SECONDS: Final = 3.0
SYNC_TIMEOUT_SECONDS: Final = 10.0
SHUTDOWN_TIMEOUT_SECONDS: Final = 5.0
FAILURES_BEFORE_REST: Final = 3
REST_SECONDS: Final = 60.0
MAX_PREFETCH_CHARS: Final = 4_000
CONFIG_KEY: Final = "memory.provider"

T = TypeVar("T")


class MemoryProvider(ABC):
    """One external memory service. Implementations may raise or hang: the manager contains both.

    All calls are keyed by chat and user: a provider must never return what it
    learned in one chat to another chat.
    """

    name: str = ""

    @abstractmethod
    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        """Text to add to the turn's context for this chat/user and the user's message, or None."""

    @abstractmethod
    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> None:
        """Hand the provider the messages of a finished turn."""

    async def shutdown(self) -> None:  # noqa: B027 - optional hook; most providers hold no resources
        """Release connections; called once when the gateway stops."""


ProviderFactory = Callable[[], MemoryProvider]


class ProviderRegistry:
    """Known providers by name; a plugin registers itself, config picks one by `memory.provider`."""

    def __init__(self, factories: Mapping[str, ProviderFactory] | None = None) -> None:
        self._factories: dict[str, ProviderFactory] = dict(factories or {})

    @classmethod
    def installed(cls) -> ProviderRegistry:
        """The providers installed as `chorus.memory_providers` entry points (imported only when chosen).

        An entry point names a `MemoryProvider` subclass or a no-argument callable that returns one.
        """
        return cls({name: _entry_point_factory(name) for name in installed_names(MEMORY_PROVIDERS)})

    def register(self, name: str, factory: ProviderFactory) -> None:
        if not name or name in self._factories:
            raise ValueError(f"memory provider name {name!r} is empty or already registered")
        self._factories[name] = factory

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._factories))

    def create(self, name: str) -> MemoryProvider:
        """Build the provider called `name`.

        Raises:
            ConfigError: no provider has that name (the message names the key and the known names), or its
                factory raised or returned something that is not a `MemoryProvider`.
        """
        factory = self._factories.get(name)
        if factory is None:
            known = ", ".join(self.names) or "none are installed"
            raise ConfigError(
                f"{CONFIG_KEY}: unknown memory provider {name!r}; known providers: {known}. "
                f"Set {CONFIG_KEY} to one of them, or to \"\" for none",
                key=CONFIG_KEY,
            )
        try:
            provider = factory()
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(
                f"{CONFIG_KEY}: the memory provider {name!r} failed to start: {type(exc).__name__}: {exc}. "
                f"Fix its settings, or set {CONFIG_KEY} to \"\" to run without it",
                key=CONFIG_KEY,
            ) from exc
        if not isinstance(provider, MemoryProvider):
            raise ConfigError(
                f"{CONFIG_KEY}: the memory provider {name!r} made a {type(provider).__name__}, "
                "not a MemoryProvider (agent.memory.providers)",
                key=CONFIG_KEY,
            )
        if not provider.name:
            provider.name = name
        return provider


def _entry_point_factory(name: str) -> ProviderFactory:
    def build() -> MemoryProvider:
        made = load_plugin(MEMORY_PROVIDERS, name, key=CONFIG_KEY)
        if not callable(made):
            raise ConfigError(f"{CONFIG_KEY}: the plugin {name!r} is not a class or a factory", key=CONFIG_KEY)
        provider: MemoryProvider = made()
        return provider

    return build


@dataclass(frozen=True, slots=True)
class ProviderHealth:
    name: str
    consecutive_failures: int
    resting_until: float | None


class MemoryManager:
    """Runs at most one external provider with timeouts and failure isolation.

    Args:
        provider: the configured provider, or None (`memory.provider: ""`).
        prefetch_timeout: seconds a prefetch may take before the turn goes on without it.
        sync_timeout: seconds a sync may take.
        clock: monotonic seconds, injected for tests.
        on_error: told (provider name, "memory_provider") on each failed or timed-out call.
    """

    def __init__(
        self,
        provider: MemoryProvider | None,
        *,
        prefetch_timeout: float = PREFETCH_TIMEOUT_SECONDS,
        sync_timeout: float = SYNC_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        on_error: PluginErrorSink | None = None,
    ) -> None:
        self._provider = provider
        self._on_error = on_error
        self._prefetch_timeout = prefetch_timeout
        self._sync_timeout = sync_timeout
        self._clock = clock
        self._failures = 0
        self._resting_until: float | None = None

    @classmethod
    def from_config(
        cls,
        name: str,
        registry: ProviderRegistry,
        *,
        prefetch_timeout: float = PREFETCH_TIMEOUT_SECONDS,
        sync_timeout: float = SYNC_TIMEOUT_SECONDS,
        on_error: PluginErrorSink | None = None,
    ) -> MemoryManager:
        """The manager for `memory.provider = name` ("" means no external provider).

        Raises:
            ConfigError: `name` is not in the registry.
        """
        provider = registry.create(name) if name else None
        return cls(provider, prefetch_timeout=prefetch_timeout, sync_timeout=sync_timeout, on_error=on_error)

    @property
    def provider(self) -> MemoryProvider | None:
        return self._provider

    @property
    def provider_name(self) -> str | None:
        return self._provider.name if self._provider is not None else None

    def health(self) -> ProviderHealth | None:
        if self._provider is None:
            return None
        return ProviderHealth(self._provider.name, self._failures, self._resting_until)

    def _available(self) -> MemoryProvider | None:
        if self._provider is None:
            return None
        if self._resting_until is not None and self._clock() < self._resting_until:
            return None
        return self._provider

    async def _guarded(self, call: str, chat_id: str, action: Awaitable[T], timeout: float) -> tuple[bool, T | None]:
        assert self._provider is not None
        try:
            async with asyncio.timeout(timeout):
                result = await action
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a provider is a task boundary: it must never break a turn
            self._failures += 1
            resting = self._failures >= FAILURES_BEFORE_REST
            if resting:
                self._resting_until = self._clock() + REST_SECONDS
            log.warning(
                "memory_provider.failed", provider=self._provider.name, call=call, chat_id=chat_id,
                error_type=type(exc).__name__, timeout=isinstance(exc, TimeoutError),
                consecutive_failures=self._failures, resting=resting,
            )
            if self._on_error is not None:
                self._on_error(self._provider.name, "memory_provider")
            return False, None
        self._failures = 0
        self._resting_until = None
        return True, result

    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        """The provider's context for this turn, or None when there is none, it failed or it was too slow."""
        provider = self._available()
        if provider is None:
            return None
        _, text = await self._guarded(
            "prefetch", chat_id, provider.prefetch(chat_id, user_id, query), self._prefetch_timeout
        )
        if not isinstance(text, str) or not text.strip():
            return None
        return text[:MAX_PREFETCH_CHARS]

    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> bool:
        """Give the provider a finished turn; True when it accepted it."""
        provider = self._available()
        if provider is None or not messages:
            return False
        accepted, _ = await self._guarded(
            "sync", chat_id, provider.sync(chat_id, user_id, tuple(messages)), self._sync_timeout
        )
        return accepted

    async def shutdown(self) -> None:
        """Shut the provider down (bounded in time); the manager then holds none."""
        provider, self._provider = self._provider, None
        if provider is None:
            return
        try:
            async with asyncio.timeout(SHUTDOWN_TIMEOUT_SECONDS):
                await provider.shutdown()
        except Exception as exc:  # noqa: BLE001 - shutting down must finish whatever the provider does
            log.warning("memory_provider.shutdown_failed", provider=provider.name, error_type=type(exc).__name__)
