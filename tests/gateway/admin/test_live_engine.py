"""LiveEngine: the built-in compressor rebuilt from the live config, its state carried over, compressions reported."""
from __future__ import annotations

from agent.context._summarizer import FallbackOnly
from agent.context.engine import CompressionResult, ContextEngine
from agent.context.factory import build_compressor
from agent.messages import Message, assistant, system, user
from agent.tokens import estimate_counter
from gateway.admin.tuning import LiveEngine
from gateway.config import ChorusConfig, parse_config
from gateway.ops.live_config import LiveConfig


def _build(config: ChorusConfig) -> ContextEngine:
    return build_compressor(config.compression, config.model, config.auxiliary, counter=estimate_counter(),
                            summarizer=FallbackOnly())


def _history(pairs: int) -> list[Message]:
    messages: list[Message] = [system("You are helpful.")]
    for i in range(pairs):
        messages += [user(f"step {i}: " + "deploy the service " * 40), assistant(f"done {i}: " + "it works " * 40)]
    return messages


def test_a_config_change_rebuilds_the_inner_engine_and_keeps_its_state() -> None:
    """After a PATCH the threshold follows the new ratio while counters and the previous summary carry over."""
    live = LiveConfig(parse_config({"model": {"context_length": 200_000}}, env={}))
    engine = LiveEngine(live, _build)
    engine.state.compression_count = 2
    engine.state.previous_summary = "earlier summary"
    before = (engine.threshold_tokens, engine.inner)
    live.update({"compression.threshold": 0.75})
    after = (engine.threshold_tokens, engine.inner)
    assert (before[0], after[0]) == (100_000, 150_000)
    assert before[1] is not after[1]
    assert (engine.state.compression_count, engine.state.previous_summary) == (2, "earlier summary")


def test_disabling_compression_at_runtime_stops_automatic_compression() -> None:
    """compression.enabled false through LiveConfig: should_compress is false even far past the threshold."""
    live = LiveConfig(ChorusConfig())
    engine = LiveEngine(live, _build)
    assert engine.should_compress(120_000) is True
    live.update({"compression.enabled": False})
    assert engine.should_compress(120_000) is False


async def test_each_compression_is_reported_with_the_input_size() -> None:
    """The sink gets (session key or None, messages in, result) for every compress() call."""
    seen: list[tuple[str | None, int, CompressionResult]] = []
    live = LiveConfig(parse_config({"model": {"context_length": 8000}}, env={}))
    engine = LiveEngine(live, _build, on_compression=lambda *args: seen.append(args))
    history = _history(30)
    result = await engine.compress(history, trigger="manual", force=True)
    assert [(key, count, r.outcome) for key, count, r in seen] == [(None, 61, "compressed")]
    assert result.summary_kind == "fallback" and result.tokens_after < result.tokens_before
