"""`ResilientModelClient` over the real `OpenAIModelClient` and the fake server, with the sleep injected."""
from __future__ import annotations

import asyncio

import pytest

from agent.messages import user
from agent.model_client import OpenAIModelClient
from agent.model_retry import (
    BUSY_NOTICE,
    ChainEntry,
    ModelFailover,
    ResilientModelClient,
    RetryPolicy,
    retry_notice,
)
from agent.model_windows import MemoryWindowStore, ModelEndpoint, ModelWindows
from chorus_errors import ContextOverflow
from tests.fakes.openai_server import FakeOpenAI, Reply


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def _client(fake: FakeOpenAI, sleeps: Sleeps, *, attempts: int = 4) -> ResilientModelClient:
    endpoint = ModelEndpoint(name="main", base_url=fake.base_url, context_length=128_000)
    inner = OpenAIModelClient(model="main", base_url=fake.base_url, api_key="sk-test")
    return ResilientModelClient(
        [ChainEntry(inner, endpoint)], windows=ModelWindows(endpoint, MemoryWindowStore()),
        policy=RetryPolicy(attempts, 1.0, 30.0), sleep=sleeps, jitter=lambda: 0.0,
    )


def test_backoff_doubles_with_jitter_and_stops_at_the_cap() -> None:
    """Equal jitter: half the exponential step fixed, half random; never above max_backoff_seconds."""
    policy = RetryPolicy(6, 1.0, 5.0)
    assert [policy.delay(n, None, 0.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.5]
    assert [policy.delay(n, None, 0.999) for n in (1, 4)] == pytest.approx([0.9995, 4.9975])
    assert policy.delay(1, 7.0, 0.5) == 7.0  # a provider's Retry-After wins


async def test_retry_after_is_honoured_and_a_long_wait_is_announced_once(fake_openai: FakeOpenAI) -> None:
    """Retry-After: 6 twice, then an answer: waits 6 s and 6 s, and the chat hears "busy, retrying" once."""
    fake_openai.push(Reply(status=429, headers={"retry-after": "6"}), Reply(status=429, headers={"retry-after": "6"}))
    sleeps, notices = Sleeps(), []

    async def notice(text: str) -> None:
        notices.append(text)

    client = _client(fake_openai, sleeps)
    token = retry_notice.set(notice)
    try:
        completion = await client.complete([user("hi")])
    finally:
        retry_notice.reset(token)
        await client.close()
    assert completion.message.text == "echo: hi"
    assert sleeps.delays == [6.0, 6.0]
    assert notices == [BUSY_NOTICE]


async def test_short_waits_are_not_announced_and_ms_header_wins(fake_openai: FakeOpenAI) -> None:
    """retry-after-ms is read in milliseconds; a wait under 10 s tells nobody."""
    fake_openai.push(Reply(status=429, headers={"retry-after-ms": "250"}), Reply(status=502))
    sleeps, notices = Sleeps(), []

    async def notice(text: str) -> None:
        notices.append(text)

    client = _client(fake_openai, sleeps)
    token = retry_notice.set(notice)
    try:
        await client.complete([user("hi")])
    finally:
        retry_notice.reset(token)
        await client.close()
    assert sleeps.delays == [0.25, 1.0]
    assert notices == []


async def test_overflow_is_not_retried_and_teaches_the_window(fake_openai: FakeOpenAI) -> None:
    """An overflow goes back to the loop at once (it compresses), and the stated window is learned."""
    fake_openai.window = 50
    sleeps = Sleeps()
    client = _client(fake_openai, sleeps)
    try:
        with pytest.raises(ContextOverflow) as raised:
            await client.complete([user("word " * 400)])
    finally:
        await client.close()
    assert raised.value.stated_limit is None  # 50 is below any real window: not read as one
    assert sleeps.delays == [] and len(fake_openai.requests) == 1
    assert client.windows.active_window() < 128_000


class SteppedClock:
    """Monotonic seconds that move only when the injected sleep waits."""

    def __init__(self, sleeps: Sleeps) -> None:
        self._sleeps = sleeps

    def __call__(self) -> float:
        return sum(self._sleeps.delays)


def _chain(main: FakeOpenAI, backup: FakeOpenAI, policy: RetryPolicy, sleeps: Sleeps,
           events: list[ModelFailover], *, timeout_seconds: float = 120.0) -> ResilientModelClient:
    first = ModelEndpoint(name="main", base_url=main.base_url, context_length=128_000)
    second = ModelEndpoint(name="backup", base_url=backup.base_url, context_length=32_000)
    return ResilientModelClient(
        [ChainEntry(OpenAIModelClient(model="main", base_url=main.base_url, api_key="sk-expired",
                                      timeout_seconds=timeout_seconds), first),
         ChainEntry(OpenAIModelClient(model="backup", base_url=backup.base_url, api_key="sk-backup"), second)],
        windows=ModelWindows(first, MemoryWindowStore()), policy=policy, sleep=sleeps, jitter=lambda: 0.0,
        clock=SteppedClock(sleeps), observe=events.append,
    )


@pytest.mark.parametrize("status", [401, 403])
async def test_a_rejected_key_moves_on_to_the_fallback_and_names_the_key(fake_openai: FakeOpenAI, status: int) -> None:
    """An expired key (401/403) is not retried, the fallback answers, and the event names model.api_key."""
    fake_openai.push(Reply(status=status, error_type="invalid_api_key"))
    sleeps, events = Sleeps(), []
    async with FakeOpenAI() as backup:
        client = _chain(fake_openai, backup, RetryPolicy(4, 1.0, 30.0), sleeps, events)
        try:
            completion = await client.complete([user("hello")])
        finally:
            await client.close()
        assert completion.message.content == "echo: hello"
        assert len(fake_openai.requests) == 1 and [r["model"] for r in backup.requests] == ["backup"]
    assert sleeps.delays == []
    assert client.windows.active.name == "backup"
    [event] = events
    assert (event.model, event.status, event.reason, event.next_model) == ("main", status, "auth", "backup")
    assert event.fix.startswith(f"model.api_key rejected by 127.0.0.1:{fake_openai.port} ({status}): check the key")
    assert "sk-expired" not in event.fix


async def test_a_hanging_primary_gives_way_at_the_chain_deadline(fake_openai: FakeOpenAI) -> None:
    """A primary that never answers costs total_timeout_seconds once, not max_attempts × timeout_seconds."""
    never = asyncio.Event()
    fake_openai.push(*(Reply(gate=never) for _ in range(4)))
    sleeps, events = Sleeps(), []
    async with FakeOpenAI() as backup:
        client = _chain(fake_openai, backup, RetryPolicy(4, 1.0, 30.0, total_timeout_seconds=0.2), sleeps, events,
                        timeout_seconds=3600.0)
        try:
            completion = await client.complete([user("still there?")])
        finally:
            never.set()
            await client.close()
    assert completion.message.content == "echo: still there?"
    assert len(fake_openai.requests) == 1  # the deadline ended the chain: no second hanging attempt
    assert [(e.reason, e.next_model) for e in events] == [("deadline", "backup")]
    assert "model.retry.total_timeout_seconds" in events[0].fix


async def test_a_wait_that_would_pass_the_deadline_goes_to_the_fallback(fake_openai: FakeOpenAI) -> None:
    """500s back off 0.5 s, 1 s; the next 2 s wait would end past the 2.5 s deadline, so the fallback answers."""
    fake_openai.push(*(Reply(status=500, error_type="server_error") for _ in range(4)))
    sleeps, events = Sleeps(), []
    async with FakeOpenAI() as backup:
        client = _chain(fake_openai, backup, RetryPolicy(4, 1.0, 30.0, total_timeout_seconds=2.5), sleeps, events)
        try:
            completion = await client.complete([user("hi")])
        finally:
            await client.close()
        assert [r["model"] for r in backup.requests] == ["backup"]
    assert completion.message.content == "echo: hi"
    assert sleeps.delays == [0.5, 1.0] and len(fake_openai.requests) == 3
    assert [(e.reason, e.status) for e in events] == [("unavailable", 500)]
