"""Flaky providers: retries with backoff, then the fallback models, around any `ModelClient`.

Owns `RetryPolicy` (exponential backoff with jitter; a provider's
`Retry-After` / `retry-after-ms` wins), `ChainEntry` and `ResilientModelClient`,
a `ModelClient` wrapper that retries 429 / 5xx / timeouts / connection errors
on one model, then tries `model.fallbacks` in order, and records in
`ModelWindows` which model answers (the compressor and hygiene read its
window) and what an overflow proved about a window. 401/403, other 400s and
overflows are never retried here: the loop compresses on an overflow, the user
is told about the rest. A wait that passes `notice_after` seconds is announced
once through the turn's notice sink. Wrapper, not subclass; no SDK types here.
"""
from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace

import structlog

from agent.messages import Message, ToolSchema
from agent.model_client import Completion, ModelClient, OpenAIModelClient, TextSink
from agent.model_windows import ModelEndpoint, ModelWindows
from agent.reasoning import filtered, strip_reasoning
from agent.settings import RetrySettings
from agent.tokens import estimate_tokens
from chorus_errors import ContextOverflow, ModelError, ModelUnavailable, RateLimited

log = structlog.get_logger(__name__)

BUSY_NOTICE = "The model is busy, retrying…"
NOTICE_AFTER_SECONDS = 10.0
# A Retry-After longer than this is a quota reset, not a wait: move on to the fallbacks.
MAX_RETRY_AFTER_SECONDS = 120.0

Sleep = Callable[[float], Awaitable[None]]
NoticeSink = Callable[[str], Awaitable[None]]
# The chat to tell when a wait grows long; bound by the gateway for one turn.
retry_notice: ContextVar[NoticeSink | None] = ContextVar("retry_notice", default=None)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 4
    initial_backoff_seconds: float = 1.0
    max_backoff_seconds: float = 30.0

    @classmethod
    def from_settings(cls, settings: RetrySettings) -> RetryPolicy:
        return cls(settings.max_attempts, settings.initial_backoff_seconds, settings.max_backoff_seconds)

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
                if not (retryable(exc) or isinstance(exc, ModelUnavailable)) or position == len(self._chain) - 1:
                    raise  # 401/403 and refused requests: another model would refuse them too
                last = exc
                nxt = self._chain[position + 1].endpoint
                log.warning("model.fallback", failed=entry.endpoint.name, status=exc.status, next=nxt.name)
                continue
            if self.windows.active != entry.endpoint:
                log.info("model.active", model=entry.endpoint.name, fallback=position > 0)
            self.windows.set_active(entry.endpoint)
            return completion
        assert last is not None  # the loop either returned or raised on the last entry
        raise last

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
        for attempt in range(1, policy.max_attempts + 1):
            try:
                return await self._one(entry, messages, tools, max_tokens, on_text)
            except ModelError as exc:
                if not retryable(exc) or attempt == policy.max_attempts:
                    raise
                retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
                if retry_after is not None and retry_after > MAX_RETRY_AFTER_SECONDS:
                    raise
                delay = policy.delay(attempt, retry_after, self._jitter())
                log.warning(
                    "model.retrying", model=entry.endpoint.name, attempt=attempt, status=exc.status,
                    error=type(exc).__name__, delay_seconds=round(delay, 2),
                )
                await self._maybe_notice(waited, delay)
                await self._sleep(delay)
                waited[0] += delay
        raise AssertionError("unreachable: the last attempt raises")

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
    "BUSY_NOTICE", "ChainEntry", "ResilientModelClient", "RetryPolicy", "retry_notice", "retryable",
]
