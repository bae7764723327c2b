"""MemoryManager: one external provider, chosen by name, that can never break or stall a turn."""
from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from agent.memory.providers import (
    FAILURES_BEFORE_REST,
    REST_SECONDS,
    MemoryManager,
    MemoryProvider,
    ProviderRegistry,
)
from agent.messages import Message, user
from chorus_errors import ConfigError


class RecordingProvider(MemoryProvider):
    """Remembers synced user messages per (chat, user) and returns them on prefetch."""

    name = "recording"

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str | None], list[str]] = {}
        self.shut_down = False

    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        notes = self.seen.get((chat_id, user_id))
        return "\n".join(notes) if notes else None

    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> None:
        self.seen.setdefault((chat_id, user_id), []).extend(m.text for m in messages if m.role == "user")

    async def shutdown(self) -> None:
        self.shut_down = True


class BrokenProvider(MemoryProvider):
    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        self.calls += 1
        raise ConnectionError("provider down")

    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> None:
        self.calls += 1
        raise ConnectionError("provider down")


class HangingProvider(MemoryProvider):
    """Never answers until released."""

    name = "hanging"

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        await self.release.wait()
        return "too late"

    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> None:
        await self.release.wait()

    async def shutdown(self) -> None:
        await self.release.wait()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_provider_context_is_keyed_by_chat_and_user() -> None:
    """What was synced for one chat/user comes back only for that chat/user."""
    provider = RecordingProvider()
    manager = MemoryManager(provider)
    assert await manager.sync("chat-a", "u1", [user("I am vegetarian")]) is True
    assert await manager.prefetch("chat-a", "u1", "dinner?") == "I am vegetarian"
    assert (await manager.prefetch("chat-b", "u1", "dinner?"), await manager.prefetch("chat-a", "u2", "x")) == (None, None)


async def test_a_raising_provider_returns_none_and_the_turn_goes_on() -> None:
    """Exceptions from prefetch and sync are contained: None / False, nothing raised."""
    manager = MemoryManager(BrokenProvider())
    assert (await manager.prefetch("c", "u", "q"), await manager.sync("c", "u", [user("x")])) == (None, False)


async def test_a_hanging_provider_times_out() -> None:
    """A provider that never answers costs the turn at most the timeout."""
    provider = HangingProvider()
    manager = MemoryManager(provider, prefetch_timeout=0.05, sync_timeout=0.05)
    assert (await manager.prefetch("c", "u", "q"), await manager.sync("c", "u", [user("x")])) == (None, False)
    health = manager.health()
    assert health is not None and health.consecutive_failures == 2


async def test_repeated_failures_rest_the_provider_then_retry() -> None:
    """After several failures in a row the provider is skipped for a while, then tried again."""
    provider = BrokenProvider()
    clock = FakeClock()
    manager = MemoryManager(provider, clock=clock)
    for _ in range(FAILURES_BEFORE_REST):
        await manager.prefetch("c", "u", "q")
    await manager.prefetch("c", "u", "q")
    assert provider.calls == FAILURES_BEFORE_REST
    clock.now += REST_SECONDS + 1
    await manager.prefetch("c", "u", "q")
    assert provider.calls == FAILURES_BEFORE_REST + 1


async def test_shutdown_is_bounded_and_final() -> None:
    """shutdown calls the provider's hook once; afterwards the manager has no provider."""
    provider = RecordingProvider()
    manager = MemoryManager(provider)
    await manager.shutdown()
    assert (provider.shut_down, manager.provider_name, await manager.prefetch("c", "u", "q")) == (True, None, None)


def test_unknown_provider_name_is_a_config_error_naming_key_and_choices() -> None:
    """memory.provider must name a registered provider; the error lists the known names."""
    registry = ProviderRegistry({"recording": RecordingProvider, "broken": BrokenProvider})
    with pytest.raises(ConfigError, match=r"memory.provider: unknown memory provider 'honcho'; known providers: broken, recording") as caught:
        MemoryManager.from_config("honcho", registry)
    assert caught.value.key == "memory.provider"


def test_empty_provider_name_means_none_and_registry_refuses_duplicates() -> None:
    """'' runs no external provider; registering a name twice is refused."""
    registry = ProviderRegistry()
    registry.register("recording", RecordingProvider)
    with pytest.raises(ValueError, match="already registered"):
        registry.register("recording", RecordingProvider)
    assert (MemoryManager.from_config("", registry).provider_name,
            MemoryManager.from_config("recording", registry).provider_name) == (None, "recording")
