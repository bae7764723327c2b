"""Flaky providers: retries with backoff, then the fallback models, around any `ModelClient`.

Owns `RetryPolicy` (exponential backoff with jitter; a provider's
`Retry-After` / `retry-after-ms` wins), `ChainEntry` and `ResilientModelClient`,
a `ModelClient` wrapper that retries 429 / 5xx / timeouts / connection errors
on one model, then tries `model.fallbacks` in order, and records in
`ModelWindows` which model answers (the compressor and hygiene read its
window) and what an overflow proved about a window. One model's retry chain
(attempts and waits) has one deadline, `model.retry.total_timeout_seconds`:
a hanging model costs that, not max_attempts × timeout_seconds, before the
next model is tried. A rejected key (401/403) is not retried but moves on to
the fallbacks (an expired key is the commonest outage); every move is handed
to the observer as a `ModelFailover` with the operator's fix. Other 400s and
overflows are never retried or passed on: the loop compresses on an overflow,
the user is told about the rest. A wait that passes `notice_after` seconds is
announced once through the turn's notice sink. Wrapper, not subclass; no SDK
types here.
"""
from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import structlog

from agent.messages import Message, ToolSchema
from agent.model_client import Completion, ModelClient, OpenAIModelClient, TextSink
from agent.model_windows import ModelEndpoint, ModelWindows
from agent.reasoning import filtered, strip_reasoning
from agent.settings import RetrySettings
from agent.tokens import estimate_tokens
from chorus_errors import ContextOverflow, ModelAuthError, ModelError, ModelUnavailable, RateLimited

log = structlog.get_logger(__name__)

BUSY_NOTICE = "The model is busy, retrying…"
NOTICE_AFTER_SECONDS = 10.0
# A Retry-After longer than this is a quota reset, not a wait: move on to the fallbacks.
MAX_RETRY_AFTER_SECONDS = 120.0

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]
NoticeSink = Callable[[str], Awaitable[None]]
# The chat to tell when a wait grows long; bound by the gateway for one turn.
retry_notice: ContextVar[NoticeSink | None] = ContextVar("retry_notice", default=None)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 4
    initial_backoff_seconds: float = 1.0
    max_backoff_seconds: float = 30.0
    total_timeout_seconds: float = 90.0  # one model's whole retry chain within one call

    @classmethod
    def from_settings(cls, settings: RetrySettings) -> RetryPolicy:
        return cls(settings.max_attempts, settings.initial_backoff_seconds, settings.max_backoff_seconds,
                   settings.total_timeout_seconds)

    def delay(self, attempt: int, retry_after: float | None, jitter: float) -> float:
        """Seconds before attempt `attempt + 1` (`attempt` counts from 1); `jitter` in [0, 1)."""
        if retry_after is not None:
            return max(0.0, retry_after)
        ceiling = min(self.max_backoff_seconds, self.initial_backoff_seconds * 2.0 ** (attempt - 1))
        return ceiling / 2 + ceiling / 2 * jitter  # "equal jitter": never zero, never in lockstep


@dataclass(frozen=True, slots=True)
class ChainEntry:
    """One model of the chain: its client and what it is (name, endpoint, configured window)."""

    client: ModelClient
    endpoint: ModelEndpoint


@dataclass(frozen=True, slots=True)
class ModelFailover:
    """The chain moved past a model: which one failed, why, the next one, and the operator's fix."""

    model: str
    status: int | None
    reason: str  # "auth" (401/403) | "deadline" (model.retry.total_timeout_seconds) | "unavailable"
    next_model: str
    fix: str


FailoverObserver = Callable[[ModelFailover], None]


class DeadlinePassed(ModelUnavailable):
    """One model's retry chain ran past `model.retry.total_timeout_seconds`."""


def _provider(endpoint: ModelEndpoint) -> str:
    """The host that refused (never a path or a key): the base URL's host, or the SDK's default provider."""
    if not endpoint.base_url:
        return "api.openai.com"
    return urlsplit(endpoint.base_url).netloc or endpoint.base_url


def _failover(position: int, entry: ChainEntry, nxt: ChainEntry, exc: ModelError, seconds: float) -> ModelFailover:
    name, then = entry.endpoint.name, f"answering with fallback {nxt.endpoint.name}"
    if isinstance(exc, ModelAuthError):
        key = "model.api_key" if position == 0 else f"model.fallbacks[{position - 1}].api_key"
        fix = f"{key} rejected by {_provider(entry.endpoint)} ({exc.status}): check the key; {then}"
        return ModelFailover(name, exc.status, "auth", nxt.endpoint.name, fix)
    if isinstance(exc, DeadlinePassed):
        fix = (f"model {name} gave no answer within model.retry.total_timeout_seconds ({seconds:g} s): "
               f"check the provider; {then}")
        return ModelFailover(name, exc.status, "deadline", nxt.endpoint.name, fix)
    fix = f"model {name} failed ({exc.status or type(exc).__name__}) after its retries: check the provider; {then}"
    return ModelFailover(name, exc.status, "unavailable", nxt.endpoint.name, fix)


def retryable(exc: ModelError) -> bool:
    """429 (not for size), 5xx, timeouts, connection errors: waiting may help."""
    if isinstance(exc, RateLimited):
        return not exc.long_context
    return isinstance(exc, ModelUnavailable) and (exc.timeout or exc.connection or (exc.status or 0) >= 500)


def _request_tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(message.text) + 4 for message in messages)


class ResilientModelClient:
    """`ModelClient` over a chain: the main model first, then each fallback.

    Args:
        chain: the main model, then the fallbacks in order.
        windows: effective windows and the active model (shared with the compressor).
        policy: retries per model.
        sleep: the wait (injected in tests).
        jitter: a source of [0, 1) numbers.
        notice_after: cumulative wait after which the chat is told once.
        strip_reasoning: `<think>` blocks never reach `on_text` or the returned message.
        clock: monotonic seconds, read against `policy.total_timeout_seconds` (injected in tests).
        observe: told of every move to the next model (the gateway's dashboard event).
    """

    def __init__(
        self,
        chain: Sequence[ChainEntry],
        *,
        windows: ModelWindows,
        policy: RetryPolicy,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
        notice_after: float = NOTICE_AFTER_SECONDS,
        strip_reasoning: bool = True,
        clock: Clock = time.monotonic,
        observe: FailoverObserver | None = None,
    ) -> None:
        if not chain:
            raise ValueError("ResilientModelClient needs at least the main model")
        self._chain = tuple(chain)
        self.model = chain[0].client.model
        self.windows = windows
        self._policy = policy
        self._sleep = sleep
        self._jitter = jitter
        self._notice_after = notice_after
        self._strip = strip_reasoning
        self._clock = clock
        self.observe = observe  # set by the gateway after construction when the client is handed in

    @property
    def chain(self) -> tuple[ChainEntry, ...]:
        return self._chain

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        waited = [0.0, 0.0]  # seconds waited this call, seconds at the last notice (0: none yet)
        last: ModelError | None = None
        for position, entry in enumerate(self._chain):
            try:
                completion = await self._attempts(entry, messages, tools, max_tokens, on_text, waited)
            except ContextOverflow as exc:
                self.windows.set_active(entry.endpoint)
                self.windows.learn(entry.endpoint, stated=exc.stated_limit, request_tokens=_request_tokens(messages))
                raise
            except ModelError as exc:
                passes_on = retryable(exc) or isinstance(exc, (ModelUnavailable, ModelAuthError))
                if not passes_on or position == len(self._chain) - 1:
                    raise  # refused requests (400s): another model would refuse them too
                last = exc
                self._moved_on(position, entry, exc)
                continue
            if self.windows.active != entry.endpoint:
                log.info("model.active", model=entry.endpoint.name, fallback=position > 0)
            self.windows.set_active(entry.endpoint)
            return completion
        assert last is not None  # the loop either returned or raised on the last entry
        raise last

    def _moved_on(self, position: int, entry: ChainEntry, exc: ModelError) -> None:
        event = _failover(position, entry, self._chain[position + 1], exc, self._policy.total_timeout_seconds)
        log.warning("model.fallback", failed=entry.endpoint.name, status=exc.status, reason=event.reason,
                    next=event.next_model, fix=event.fix)
        if self.observe is not None:
            try:
                self.observe(event)
            except Exception as error:  # noqa: BLE001 - an observer never fails the turn
                log.warning("model.observer_failed", error=type(error).__name__)

    async def _attempts(
        self,
        entry: ChainEntry,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        max_tokens: int | None,
        on_text: TextSink | None,
        waited: list[float],
    ) -> Completion:
        policy = self._policy
        deadline = self._clock() + policy.total_timeout_seconds
        for attempt in range(1, policy.max_attempts + 1):
            try:
                return await self._before(deadline, entry, self._one(entry, messages, tools, max_tokens, on_text))
            except DeadlinePassed:
                raise
            except ModelError as exc:
                if not retryable(exc) or attempt == policy.max_attempts:
                    raise
                retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
                if retry_after is not None and retry_after > MAX_RETRY_AFTER_SECONDS:
                    raise
                delay = policy.delay(attempt, retry_after, self._jitter())
                if self._clock() + delay >= deadline:
                    raise  # the wait alone would pass the chain's deadline: the next model now
                log.warning(
                    "model.retrying", model=entry.endpoint.name, attempt=attempt, status=exc.status,
                    error=type(exc).__name__, delay_seconds=round(delay, 2),
                )
                await self._maybe_notice(waited, delay)
                await self._sleep(delay)
                waited[0] += delay
        raise AssertionError("unreachable: the last attempt raises")

    async def _before(self, deadline: float, entry: ChainEntry, call: Awaitable[Completion]) -> Completion:
        """`call`, cancelled when the chain's deadline passes (then `DeadlinePassed`)."""
        remaining = deadline - self._clock()
        name = entry.endpoint.name
        passed = DeadlinePassed(
            f"model {name} gave no answer within model.retry.total_timeout_seconds", model=name, timeout=True,
        )
        if remaining <= 0:
            if inspect.iscoroutine(call):
                call.close()  # never started: no "never awaited" warning
            raise passed
        try:
            async with asyncio.timeout(remaining):
                return await call
        except TimeoutError:
            raise passed from None

    async def _one(
        self,
        entry: ChainEntry,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        max_tokens: int | None,
        on_text: TextSink | None,
    ) -> Completion:
        """One request; with `strip_reasoning`, reasoning is filtered out of the stream and the message."""
        if not self._strip:
            return await entry.client.complete(messages, tools=tools, max_tokens=max_tokens, on_text=on_text)
        sink, state = filtered(on_text) if on_text is not None else (None, None)
        completion = await entry.client.complete(messages, tools=tools, max_tokens=max_tokens, on_text=sink)
        rest = state.flush() if state is not None else ""
        if rest and on_text is not None:
            await on_text(rest)
        content = completion.message.content
        if isinstance(content, str):
            stripped = strip_reasoning(content)
            if stripped != content:
                completion = replace(completion, message=completion.message.with_content(stripped or None))
        return completion

    async def _maybe_notice(self, waited: list[float], delay: float) -> None:
        if waited[1] or waited[0] + delay < self._notice_after:
            return
        waited[1] = 1.0
        sink = retry_notice.get()
        if sink is None:
            return
        try:
            await sink(BUSY_NOTICE)
        except Exception as exc:  # noqa: BLE001 - a notice never fails the turn
            log.warning("model.notice_failed", error=type(exc).__name__)

    async def close(self) -> None:
        for entry in self._chain:
            if isinstance(entry.client, OpenAIModelClient):
                await entry.client.close()


__all__ = [
    "BUSY_NOTICE", "ChainEntry", "DeadlinePassed", "FailoverObserver", "ModelFailover", "ResilientModelClient",
    "RetryPolicy", "retry_notice", "retryable",
]
