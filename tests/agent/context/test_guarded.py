"""GuardedEngine: a plugin engine that raises never breaks a turn; each failure is reported once."""
from __future__ import annotations

from collections.abc import Sequence

from structlog.testing import capture_logs

from agent.context import ContextCompressor, FallbackOnly
from agent.context.engine import CompressionResult, EventSink, Trigger
from agent.context.guarded import GuardedEngine
from agent.messages import Message, system, user
from agent.plugins import PluginKind
from agent.settings import CompressionSettings
from agent.tokens import estimate_counter


class Broken(Exception):
    pass


class ExplodingEngine(ContextCompressor):
    """The built-in compressor with every decision raising (a buggy plugin)."""

    @property
    def threshold_tokens(self) -> int:
        raise Broken("secret detail")

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        raise Broken("secret detail")

    async def compress(self, messages: Sequence[Message], *, trigger: Trigger, force: bool = False,
                       on_event: EventSink | None = None) -> CompressionResult:
        raise Broken("secret detail")


async def test_a_raising_plugin_engine_answers_safe_values_and_reports_each_failure() -> None:
    """compress → aborted with the input unchanged; a property → the built-in size; one log line and one report each."""
    inner = ExplodingEngine(CompressionSettings(), context_length=200_000, max_tokens=8_000, model="main-model",
                            summarizer=FallbackOnly(), counter=estimate_counter())
    reported: list[tuple[str, PluginKind]] = []
    engine = GuardedEngine(inner, name="exploding", sizes=(96_000, 200_000),
                           on_error=lambda name, kind: reported.append((name, kind)))
    messages = (system("be brief"), user("hello"))
    with capture_logs() as logs:
        result = await engine.compress(messages, trigger="manual", force=True)
        threshold = engine.threshold_tokens
        due = engine.should_compress(150_000)
    assert (result.outcome, result.messages, result.changed) == ("aborted", messages, False)
    assert (threshold, due, engine.context_length) == (96_000, False, 200_000)
    assert [(entry["event"], entry["call"]) for entry in logs] == [
        ("context_engine.failed", "compress"), ("context_engine.failed", "threshold_tokens"),
        ("context_engine.failed", "should_compress"),
    ]
    assert "secret detail" not in str(logs)
    assert reported == [("exploding", "context_engine")] * 3
    engine.state = inner.state  # state passes through to the plugin
    assert engine.state is inner.state
