"""Anti-thrash blocks, probes, cooldowns and forced compression with an injected clock (docs/design.md §3.4)."""
from __future__ import annotations

from agent.context import _antithrash as thrash
from agent.context.engine import EngineState
from agent.messages import Message, assistant, system, user
from chorus_errors import ModelNotConfigured, ModelUnavailable
from tests.agent.context.compressor_helpers import Clock, Events, ScriptedSummarizer, chat, make

THRESHOLD = 64_000


def test_two_ineffective_compressions_block_then_one_probe() -> None:
    """Two compressions saving <10% block for 300 s; then one probe; an ineffective probe blocks again."""
    clock = Clock()
    engine = make(clock=clock)
    state = engine.state
    thrash.record_compression(state, clock(), tokens_before=100_000, tokens_after=95_000, kind="llm")
    assert engine.should_compress(90_000)
    thrash.record_compression(state, clock(), tokens_before=100_000, tokens_after=95_000, kind="llm")
    assert not engine.should_compress(90_000)
    clock.advance(299)
    assert not engine.should_compress(90_000)
    clock.advance(2)
    assert engine.should_compress(90_000)  # the probe
    thrash.record_compression(state, clock(), tokens_before=100_000, tokens_after=99_000, kind="llm")
    assert not engine.should_compress(90_000)
    clock.advance(301)
    thrash.record_compression(state, clock(), tokens_before=100_000, tokens_after=40_000, kind="llm")
    assert engine.should_compress(90_000)  # an effective probe lifts the block...
    engine.record_usage(30_000)
    assert state.ineffective_streak == 0  # ...and a real reading below the threshold clears the count


def test_real_usage_judges_the_last_compression() -> None:
    """The next real prompt_tokens at or above the threshold counts as ineffective; below it resets."""
    clock = Clock()
    engine = make(clock=clock)
    for _ in range(2):
        thrash.record_compression(engine.state, clock(), tokens_before=200_000, tokens_after=50_000, kind="llm")
        assert engine.state.last_prompt_tokens == -1
        engine.record_usage(70_000)
    assert engine.state.ineffective_streak == 2
    assert not engine.should_compress(70_000)
    engine.record_usage(30_000)
    assert engine.state.ineffective_streak == 0 and engine.should_compress(70_000)
    assert engine.state.usage_fits is False  # only the first reading after a compression sets it


def test_sentinel_after_compression_reads_as_zero() -> None:
    """last_prompt_tokens == -1 right after a compression means: do not compress until the provider reports."""
    engine = make()
    engine.state.last_prompt_tokens = -1
    assert not engine.should_compress()
    engine.record_usage(engine.threshold_tokens)
    assert engine.should_compress()


def test_two_fallback_summaries_block_like_ineffective_ones() -> None:
    """Two fallback summaries in a row block automatic compression; an LLM summary resets the streak."""
    clock = Clock()
    engine = make(clock=clock)
    thrash.record_compression(engine.state, clock(), tokens_before=100_000, tokens_after=20_000, kind="fallback")
    thrash.record_compression(engine.state, clock(), tokens_before=100_000, tokens_after=20_000, kind="fallback")
    assert not engine.should_compress(90_000)
    clock.advance(301)
    assert engine.should_compress(90_000)
    thrash.record_compression(engine.state, clock(), tokens_before=100_000, tokens_after=20_000, kind="llm")
    assert engine.state.fallback_streak == 0


def test_cooldowns_600_when_unconfigured_and_a_ladder_otherwise() -> None:
    """No provider: 600 s; other failures climb 60 -> 300 -> 900 s; success resets the ladder."""
    state = EngineState()
    assert thrash.record_summary_failure(state, 0.0, not_configured=True) == 600
    assert [thrash.record_summary_failure(state, 0.0, not_configured=False) for _ in range(4)] == [60, 300, 900, 900]
    thrash.record_summary_success(state)
    assert thrash.record_summary_failure(state, 0.0, not_configured=False) == 60


def test_cooldown_blocks_should_compress_until_it_ends() -> None:
    """During a summary-model cooldown should_compress is false."""
    clock = Clock()
    engine = make(clock=clock)
    thrash.record_summary_failure(engine.state, clock(), not_configured=False)
    assert not engine.should_compress(100_000)
    clock.advance(61)
    assert engine.should_compress(100_000)


async def test_timeouts_climb_the_ladder_and_use_the_fallback() -> None:
    """Each summary timeout gives a fallback summary and a longer cooldown (60, then 300 s)."""
    clock = Clock()
    timeout = ModelUnavailable("slow", timeout=True)
    engine = make(clock=clock, summarizer=ScriptedSummarizer(script=[timeout, timeout]))
    session = chat(60, words=300)
    first = await engine.compress(session, trigger="manual", force=True)
    assert (first.summary_kind, engine.state.cooldown_until - clock()) == ("fallback", 60)
    second = await engine.compress(session, trigger="error_recovery")
    assert second.summary_kind == "fallback"  # still cooling down: no model call at all
    clock.advance(61)
    third = await engine.compress(session, trigger="error_recovery")
    assert (third.summary_kind, engine.state.cooldown_until - clock()) == ("fallback", 300)


async def test_not_configured_summary_model_cools_down_600s() -> None:
    """A summariser reporting no provider gives the fallback and a 600 s cooldown."""
    clock = Clock()
    engine = make(clock=clock, summarizer=ScriptedSummarizer(script=[ModelNotConfigured("none")]))
    result = await engine.compress(chat(60, words=300), trigger="manual", force=True)
    assert result.summary_kind == "fallback"
    assert engine.state.cooldown_until - clock() == 600


async def test_blocked_compress_warns_once_and_force_clears() -> None:
    """While blocked, compress returns `blocked` and warns once; /compress (force) clears the block."""
    clock = Clock()
    events = Events()
    engine = make(clock=clock)
    engine.state.ineffective_streak = 2
    engine.state.blocked_until = clock() + 300
    session = chat(60, words=300)
    first = await engine.compress(session, trigger="post_response", on_event=events)
    second = await engine.compress(session, trigger="post_response", on_event=events)
    assert (first.outcome, second.outcome) == ("blocked", "blocked")
    assert first.messages == tuple(session)
    assert events.kinds == ["blocked"]
    assert engine.blocked_notice() is None  # already warned
    forced = await engine.compress(session, trigger="manual", force=True, on_event=events)
    assert forced.outcome == "compressed"
    assert events.kinds == ["blocked", "started", "finished"]
    assert (engine.state.blocked_until, engine.state.cooldown_until) == (0.0, 0.0)


def test_blocked_notice_once_per_block() -> None:
    """blocked_notice gives one event per block period, and again after a new block."""
    clock = Clock()
    engine = make(clock=clock)
    for _ in range(2):
        thrash.record_compression(engine.state, clock(), tokens_before=100, tokens_after=100, kind="llm")
    notice = engine.blocked_notice()
    assert notice is not None and notice.kind == "blocked" and "ineffective" in notice.reason
    assert engine.blocked_notice() is None
    clock.advance(301)
    assert engine.blocked_notice() is None  # probe allowed: not blocked
    thrash.record_compression(engine.state, clock(), tokens_before=100, tokens_after=100, kind="llm")
    assert engine.blocked_notice() is not None


async def test_no_gain_compressions_count_as_ineffective() -> None:
    """A compression that cannot shrink the prompt is skipped and counts toward the block."""
    clock = Clock()
    engine = make(clock=clock, protect_last_n=1)
    tiny = [system("s"), user("a"), assistant("b"), user("c"), assistant("d")]
    for _ in range(2):
        result = await engine.compress(tiny, trigger="post_response")
        assert result.outcome == "skipped"
    assert engine.state.ineffective_streak == 2
    assert (await engine.compress(tiny, trigger="post_response")).outcome == "blocked"


def test_model_switch_resets_counters() -> None:
    """Switching the model resets the persisted counters; the same model keeps them."""
    engine = make(model_thresholds={"big": 0.9}, context_length=200_000)
    engine.state.ineffective_streak = 2
    engine.on_model_switch("test-model")
    assert engine.state.ineffective_streak == 2
    engine.on_model_switch("big-model")
    assert (engine.state.ineffective_streak, engine.state.model) == (0, "big-model")
    assert engine.threshold_tokens == 180_000


def test_preflight_gate_counts_tool_schemas_and_defers_to_real_usage() -> None:
    """Preflight includes tool schemas; after a compression proved the request fits it defers to real usage."""
    from agent.messages import ToolSchema

    engine = make(context_length=128_000)
    session: list[Message] = chat(160, words=100)  # ~49K tokens of messages
    schemas = [ToolSchema(name=f"tool_{i}", description="d " * 1000, parameters={"type": "object"}) for i in range(50)]
    assert not engine.should_compress_preflight(session, [])
    assert engine.should_compress_preflight(session, schemas)
    engine.state.usage_fits = True
    assert not engine.should_compress_preflight(session, schemas)
    assert not engine.should_compress_preflight(chat(2), schemas)


def test_preflight_follows_a_growing_history() -> None:
    """Remembered per-message costs never hide growth: the same history answers the same, a longer one trips the gate."""
    engine = make(context_length=128_000)
    session: list[Message] = chat(160, words=100)  # ~49K tokens, under the 64K threshold
    assert [engine.should_compress_preflight(session, []) for _ in range(3)] == [False, False, False]
    session.extend(chat(100, words=100))  # the same objects plus new ones: ~80K tokens
    assert engine.should_compress_preflight(session, [])
    assert not engine.should_compress_preflight(session[:100], [])


def test_preflight_with_a_fresh_system_prompt_per_request() -> None:
    """The loop rebuilds the system prompt for each request; the history behind it is still followed."""
    from agent.messages import system

    engine = make(context_length=128_000)
    history: list[Message] = [m for m in chat(160, words=100) if m.role != "system"]
    assert not engine.should_compress_preflight([system("prompt"), *history], [])
    assert not engine.should_compress_preflight([system("prompt"), *history], [])
    history.extend(m for m in chat(100, words=100) if m.role != "system")
    assert engine.should_compress_preflight([system("prompt"), *history], [])
    assert engine.should_compress_preflight([system("x" * 400_000), *history[:100]], [])


def test_idle_compaction_switch() -> None:
    """idle_compact_after_seconds: 0 is off; otherwise due once that much idle time has passed."""
    assert not make().idle_compact_due(10**6)
    engine = make(idle_compact_after_seconds=3600)
    assert (engine.idle_compact_due(3599), engine.idle_compact_due(3600)) == (False, True)
