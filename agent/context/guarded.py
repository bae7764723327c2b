"""A plugin context engine behind a guard: whatever it raises, the turn goes on.

Owns `GuardedEngine`, which every engine loaded from the `chorus.context_engines`
entry points is wrapped in. A call that raises is logged once
(`context_engine.failed`, naming the engine and the call), reported to the
`PluginErrorSink` (the gateway counts `chorus_plugin_errors`) and answered with
the safe value: no compression (`compress` returns `aborted` with the input
unchanged), no pruning, and the sizes the built-in engine would use. The
built-in engine is not guarded: its own failure tiers already contain it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import structlog

from agent.context.engine import CompressionResult, ContextEngine, EngineState, EventSink, Trigger
from agent.messages import Message, ToolSchema
from agent.plugins import PluginErrorSink

log = structlog.get_logger(__name__)

T = TypeVar("T")


class GuardedEngine(ContextEngine):
    """`inner`, with every call contained.

    Args:
        inner: the plugin's engine.
        name: its `context.engine` name (logs, metric label).
        sizes: `(threshold_tokens, context_length)` to answer when the plugin cannot.
        on_error: told `(name, "context_engine")` on each failed call.
    """

    def __init__(
        self, inner: ContextEngine, *, name: str, sizes: tuple[int, int], on_error: PluginErrorSink | None = None
    ) -> None:
        self.inner = inner
        self.name = name
        self._sizes = sizes
        self._on_error = on_error

    def _call(self, call: str, action: Callable[[], T], default: T) -> T:
        try:
            return action()
        except Exception as exc:  # noqa: BLE001 - a plugin is a task boundary: it must never break a turn
            self._failed(call, exc)
            return default

    def _failed(self, call: str, exc: Exception) -> None:
        log.warning("context_engine.failed", engine=self.name, call=call, error_type=type(exc).__name__)
        if self._on_error is not None:
            self._on_error(self.name, "context_engine")

    @property
    def state(self) -> EngineState:
        return self.inner.state

    @state.setter
    def state(self, value: EngineState) -> None:
        self.inner.state = value

    @property
    def threshold_tokens(self) -> int:
        return self._call("threshold_tokens", lambda: self.inner.threshold_tokens, self._sizes[0])

    @property
    def context_length(self) -> int:
        return self._call("context_length", lambda: self.inner.context_length, self._sizes[1])

    def should_compress_preflight(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> bool:
        return self._call("should_compress_preflight", lambda: self.inner.should_compress_preflight(messages, tools),
                          False)

    def record_usage(self, prompt_tokens: int) -> None:
        self._call("record_usage", lambda: self.inner.record_usage(prompt_tokens), None)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self._call("should_compress", lambda: self.inner.should_compress(prompt_tokens), False)

    async def compress(
        self,
        messages: Sequence[Message],
        *,
        trigger: Trigger,
        force: bool = False,
        on_event: EventSink | None = None,
    ) -> CompressionResult:
        try:
            return await self.inner.compress(messages, trigger=trigger, force=force, on_event=on_event)
        except Exception as exc:  # noqa: BLE001 - see _call
            self._failed("compress", exc)
            return CompressionResult(
                outcome="aborted", trigger=trigger, messages=tuple(messages), tokens_before=0, tokens_after=0,
                reason=f"context engine {self.name!r} failed",
            )

    def prune_tool_results(self, messages: Sequence[Message], prompt_tokens: int) -> CompressionResult | None:
        return self._call("prune_tool_results", lambda: self.inner.prune_tool_results(messages, prompt_tokens), None)

    def idle_compact_due(self, idle_seconds: float) -> bool:
        return self._call("idle_compact_due", lambda: self.inner.idle_compact_due(idle_seconds), False)

    def on_model_switch(self, model: str) -> None:
        self._call("on_model_switch", lambda: self.inner.on_model_switch(model), None)


__all__ = ["GuardedEngine"]
