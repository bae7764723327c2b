"""Live tuning: making a `LiveConfig` change reach the next message without a restart.

Owns `LiveEngine`, a `ContextEngine` wrapper that rebuilds its inner engine
from the current config whenever the config changed (the engine state, i.e.
counters, cooldowns and the previous summary, carries over), and reports every
compression to a sink (the admin event log and metrics); `live_engine_factory`,
the per-agent factory to hand to `build_gateway(engine=...)`; and
`following_summarizer`, the summariser those engines share, rebuilt when the
model changes. (The turn runner and every other part follow the live config
through `gateway/live_parts.py`.) Wrappers, not subclasses: the built-in
compressor is used unchanged.
Knows nothing of HTTP.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from structlog.contextvars import get_contextvars

from agent.context import Summarizer
from agent.context.engine import CompressionResult, ContextEngine, EngineState, EventSink, Trigger
from agent.context.factory import build_summarizer
from agent.messages import Message, ToolSchema
from agent.model_windows import ModelWindows
from gateway.build import engine_factory, plugin_errors
from gateway.chats.models import with_model
from gateway.chats.policy import ModelChoice
from gateway.config import ChorusConfig
from gateway.ops.live_config import LiveConfig

# (session key or None, messages before, result): called after every compression attempt.
CompressionSink = Callable[[str | None, int, CompressionResult], None]


def current_session_key() -> str | None:
    """The session key the gateway bound for the message being handled (`bind_message_context`)."""
    key = get_contextvars().get("session_key")
    return key if isinstance(key, str) else None


class LiveEngine(ContextEngine):
    """A context engine that follows `LiveConfig`.

    Args:
        live: the runtime config holder.
        build: makes the inner engine for a config (no I/O).
        on_compression: told about each compression attempt (any outcome).
    """

    def __init__(
        self,
        live: LiveConfig,
        build: Callable[[ChorusConfig], ContextEngine],
        *,
        on_compression: CompressionSink | None = None,
    ) -> None:
        self._live = live
        self._build = build
        self._on_compression = on_compression
        self._version = live.version
        self._inner = build(live.current())

    @property
    def inner(self) -> ContextEngine:
        """The engine for the config in force now (rebuilt after a change, state kept)."""
        if self._live.version != self._version:
            state = self._inner.state
            self._inner = self._build(self._live.current())
            self._inner.state = state
            self._version = self._live.version
        return self._inner

    @property
    def state(self) -> EngineState:
        return self._inner.state

    @state.setter
    def state(self, value: EngineState) -> None:
        self._inner.state = value

    @property
    def threshold_tokens(self) -> int:
        return self.inner.threshold_tokens

    @property
    def context_length(self) -> int:
        return self.inner.context_length

    def should_compress_preflight(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> bool:
        return self.inner.should_compress_preflight(messages, tools)

    def record_usage(self, prompt_tokens: int) -> None:
        self.inner.record_usage(prompt_tokens)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.inner.should_compress(prompt_tokens)

    async def compress(
        self,
        messages: Sequence[Message],
        *,
        trigger: Trigger,
        force: bool = False,
        on_event: EventSink | None = None,
    ) -> CompressionResult:
        result = await self.inner.compress(messages, trigger=trigger, force=force, on_event=on_event)
        if self._on_compression is not None:
            self._on_compression(current_session_key(), len(messages), result)
        return result

    def prune_tool_results(self, messages: Sequence[Message], prompt_tokens: int) -> CompressionResult | None:
        return self.inner.prune_tool_results(messages, prompt_tokens)
    def idle_compact_due(self, idle_seconds: float) -> bool:
        return self.inner.idle_compact_due(idle_seconds)

    def on_model_switch(self, model: str) -> None:
        self.inner.on_model_switch(model)


SummarizerFor = Callable[[ChorusConfig], Summarizer]


def following_summarizer(start: ChorusConfig) -> SummarizerFor:
    """One summariser shared by many engines, rebuilt when `model.*` or `auxiliary.*` changed."""
    built = [(start.model, start.auxiliary, build_summarizer(start.model, start.auxiliary))]

    def shared(config: ChorusConfig) -> Summarizer:
        model, auxiliary, current = built[-1]
        if (model, auxiliary) != (config.model, config.auxiliary):
            current = build_summarizer(config.model, config.auxiliary)
            built[-1] = (config.model, config.auxiliary, current)
        return current

    return shared


def live_engine_factory(
    live: LiveConfig,
    *,
    summarizer: Summarizer | None = None,
    summarizers: SummarizerFor | None = None,
    on_compression: CompressionSink | None = None,
    model: ModelChoice | None = None,
    windows: ModelWindows | None = None,
) -> Callable[[], ContextEngine]:
    """The per-agent engine factory for `build_gateway(engine=...)`, following `live`.

    The summariser (model clients) is shared by every engine: `summarizers` gives it per config
    (default: one that follows `model.*` and `auxiliary.*`, `following_summarizer`); a given
    `summarizer` is kept as it is. `model` sizes the engine for a chat that switched models (`/model`).
    """
    fixed = summarizer
    shared = summarizers or following_summarizer(live.current())

    def summarizer_for(config: ChorusConfig) -> Summarizer:
        return fixed if fixed is not None else shared(config)

    def build(config: ChorusConfig) -> ContextEngine:
        return engine_factory(with_model(config, model) if model else config, summarizer=summarizer_for(config),
                              windows=windows, on_plugin_error=plugin_errors(live.bus))()

    return lambda: LiveEngine(live, build, on_compression=on_compression)


__all__ = ["CompressionSink", "LiveEngine", "current_session_key", "following_summarizer", "live_engine_factory"]
