"""ContextCompressor end to end on real sessions: result shape, iterative summaries, sections, rollback, events."""
from __future__ import annotations

from collections.abc import Sequence

from agent.context import CompressionExplain
from agent.context._handoff import END_MARKER, SUMMARY_PREFIX, SYSTEM_NOTE, handoff_text, is_handoff
from agent.context._sanitize import sanitize_tool_pairs
from agent.context.engine import EngineState
from agent.messages import Message, assistant, messages_to_wire, tool_result, user
from agent.tokens import TokenCounter, default_counter
from tests.agent.context.compressor_helpers import Events, ScriptedSummarizer, call, irc, make, minisweagent, taubench


class RecordingSection:
    """A deterministic section that records what it was given."""

    title = "Fact ledger"

    def __init__(self) -> None:
        self.calls: list[tuple[int, str | None]] = []

    def build(self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter) -> str | None:
        self.calls.append((len(dropped), previous_summary))
        return f"- kept {len(dropped)} messages' facts"


def _valid(messages: Sequence[Message]) -> bool:
    return sanitize_tool_pairs(messages)[0] == list(messages)


async def test_coding_session_compresses_to_head_summary_tail() -> None:
    """A real coding session ends up as system + task + summary + verbatim tail, valid and under the threshold."""
    counter = default_counter()
    engine = make(counter=counter)
    original = minisweagent()
    result = await engine.compress(original, trigger="manual", force=True)
    out = result.messages
    assert result.outcome == "compressed" and result.summary_kind == "fallback"
    assert out[0].text == original[0].text + "\n\n" + SYSTEM_NOTE
    assert out[1] == original[1]  # the task, verbatim
    summary = next(m for m in out if is_handoff(m))
    assert summary.text.startswith(SUMMARY_PREFIX) and summary.text.endswith(END_MARKER)
    assert _valid(out)
    assert result.tokens_after == counter.count_messages(out) < engine.threshold_tokens
    assert result.tokens_after < counter.count_messages(original) // 2
    assert out[-1] == original[-1]
    assert result.pruned_tool_results > 10
    assert all(m not in out for m in result.replaced)


async def test_explain_accounts_for_every_message() -> None:
    """The explain value gives each input message exactly one fate, consistent with the output."""
    original = taubench()
    result = await make(context_length=16_000).compress(original, trigger="manual", force=True)
    explain = result.explain
    assert isinstance(explain, CompressionExplain)
    fates = explain.fates()
    assert [fate.index for fate in fates] == list(range(len(original)))
    assert {"head", "summarised", "tail"} <= {fate.fate for fate in fates} <= {"head", "pinned", "summarised", "tail"}
    kept = [original[f.index] for f in fates if f.fate == "tail" and f.pruned is None]
    assert all(m in result.messages for m in kept)
    assert len(explain.summarised) == sum(1 for f in fates if f.fate == "summarised")


async def test_iterative_update_sends_previous_summary_and_sections_survive() -> None:
    """The second compression updates the previous summary; sections are appended each time, never doubled."""
    section = RecordingSection()
    summarizer = ScriptedSummarizer(script=["## Goal\nfirst", "## Goal\nsecond\n\n## Fact ledger\n- invented by the model"])
    engine = make(summarizer=summarizer, sections=[section], context_length=16_000)
    first = await engine.compress(taubench(), trigger="manual", force=True)
    assert first.summary_kind == "llm"
    first_handoff = handoff_text(next(m for m in first.messages if is_handoff(m)))
    assert "## Goal\nfirst\n\n## Fact ledger\n- kept" in first_handoff
    assert summarizer.requests[0].previous_summary is None
    grown = [*first.messages, user("and now change the flight to May 20"), assistant("Let me check.")] + [
        m for m in taubench(1)[2:40] if m.role != "system"
    ]
    second = await engine.compress(grown, trigger="manual", force=True)
    request = summarizer.requests[1]
    assert request.previous_summary == "## Goal\nfirst"  # framing and sections stripped
    assert not any(is_handoff(t) for t in request.turns)
    handoff = next(m for m in second.messages if is_handoff(m)).text
    assert handoff.count("## Fact ledger") == 1 and "invented by the model" not in handoff
    assert section.calls[1][1] == first_handoff  # the section saw the whole previous handoff
    assert second.explain is not None and second.explain.sections == ("Fact ledger",)


async def test_fallback_path_also_gets_sections() -> None:
    """Sections are appended after a fallback summary too, before the END marker."""
    result = await make(sections=[RecordingSection()], context_length=16_000).compress(taubench(), trigger="manual", force=True)
    handoff = next(m for m in result.messages if is_handoff(m)).text
    assert handoff.index("## Fact ledger") < handoff.index(END_MARKER)
    assert result.summary_kind == "fallback"


async def test_foreign_previous_summary_is_discarded() -> None:
    """A remembered summary that is not in this session's messages is never sent to the summariser."""
    summarizer = ScriptedSummarizer()
    engine = make(summarizer=summarizer, context_length=16_000)
    engine.state.previous_summary = "## Goal\nanother chat's secret plan"
    await engine.compress(taubench(), trigger="manual", force=True)
    assert summarizer.requests[0].previous_summary is None
    assert engine.state.previous_summary is not None and "secret plan" not in engine.state.previous_summary


async def test_resume_recovers_previous_summary_from_messages() -> None:
    """A fresh engine (after a restart) finds the previous summary in the newest handoff message."""
    summarizer = ScriptedSummarizer(script=["## Goal\nfrom before the restart", "## Goal\nupdated"])
    first = await make(summarizer=summarizer, context_length=16_000).compress(taubench(), trigger="manual", force=True)
    reloaded = [Message(role=m.role, content=m.content, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id, name=m.name) for m in first.messages]
    grown = reloaded + [m for m in taubench(2)[1:50] if m.role != "system"]
    await make(summarizer=summarizer, context_length=16_000).compress(grown, trigger="manual", force=True)
    assert summarizer.requests[1].previous_summary == "## Goal\nfrom before the restart"


async def test_any_exception_rolls_back_messages_and_state() -> None:
    """An unexpected error inside compression leaves the messages and the state as they were."""

    class Broken:
        available = True

        async def summarize(self, request: object) -> str:
            raise RuntimeError("bug")

    events = Events()
    engine = make(summarizer=Broken(), context_length=16_000)
    engine.state.compression_count = 4
    before = EngineState.from_json(engine.state.to_json())
    original = taubench()
    result = await engine.compress(original, trigger="manual", force=True, on_event=events)
    assert (result.outcome, result.messages) == ("aborted", original)
    assert "internal error (RuntimeError)" in result.reason
    assert engine.state == before
    assert events.kinds == ["started", "aborted"]


async def test_finished_event_carries_token_counts() -> None:
    """Status events: started, then finished with before/after tokens."""
    events = Events()
    result = await make().compress(minisweagent(), trigger="post_response", force=True, on_event=events)
    assert events.kinds == ["started", "finished"]
    assert (events.seen[1].tokens_before, events.seen[1].tokens_after) == (result.tokens_before, result.tokens_after)


async def test_skipped_when_everything_is_protected() -> None:
    """A short session is left alone with a `skipped` event and reason."""
    events = Events()
    short = [Message(role="system", content="s"), user("hi"), assistant("hello")]
    result = await make().compress(short, trigger="manual", force=True, on_event=events)
    assert (result.outcome, result.messages) == ("skipped", tuple(short))
    assert events.kinds == ["started", "skipped"] and "nothing to compress" in events.seen[1].reason


async def test_group_chat_summary_role_avoids_collisions() -> None:
    """An all-user group chat gets an assistant summary between user messages; the newest user line stays verbatim."""
    original = irc()
    result = await make(context_length=32_000).compress(original, trigger="manual", force=True)
    index = next(i for i, m in enumerate(result.messages) if is_handoff(m))
    assert result.messages[index].role == "assistant"
    assert result.messages[-1] == original[-1]
    assert result.messages[: index] == original[:index]  # first compression protects the first 3 lines


async def test_disabled_engine_skips_unless_forced() -> None:
    """compression.enabled=false stops automatic compression; /compress still works."""
    engine = make(enabled=False)
    assert not engine.should_compress(10**6)
    assert (await engine.compress(minisweagent(), trigger="post_response")).outcome == "skipped"
    assert (await engine.compress(minisweagent(), trigger="manual", force=True)).outcome == "compressed"


def test_proactive_prune_reclaims_big_old_results_only() -> None:
    """Proactive pruning applies above its token trigger when it reclaims enough, without a summary."""
    engine = make(proactive_prune_tokens=20_000, proactive_prune_min_result_chars=3000, proactive_prune_min_reclaim_tokens=1000)
    original = minisweagent()
    assert engine.proactive_prune(original, prompt_tokens=10_000).outcome == "skipped"
    result = engine.proactive_prune(original, prompt_tokens=40_000)
    assert result.outcome == "compressed" and result.summary_kind == "none"
    assert len(result.messages) == len(original)
    changed = [i for i, (a, b) in enumerate(zip(original, result.messages)) if a != b]
    assert changed and all(original[i].role == "tool" and len(original[i].text) > 3000 for i in changed)
    assert not any(is_handoff(m) for m in result.messages)
    strict = make(proactive_prune_tokens=20_000, proactive_prune_min_reclaim_tokens=10**7)
    assert strict.proactive_prune(original, prompt_tokens=40_000).outcome == "skipped"


async def test_metadata_never_reaches_the_wire() -> None:
    """The compressed list serialises to plain OpenAI messages without in-process keys."""
    result = await make().compress(minisweagent(), trigger="manual", force=True)
    wire = messages_to_wire(result.messages)
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id", "name"} for m in wire)


async def test_reused_ids_across_turns_survive_compression() -> None:
    """A session reusing tool_call ids stays correctly paired after compression (pairing by position)."""
    messages = [Message(role="system", content="s"), user("start " * 200)]
    for turn in range(30):
        messages += [assistant(f"step {turn} " * 40, tool_calls=[call("call_0")]), tool_result("call_0", f"result {turn} " * 200)]
    messages.append(user("summary please"))
    result = await make(context_length=16_000).compress(messages, trigger="manual", force=True, on_event=Events())
    assert result.outcome == "compressed" and _valid(result.messages)
    assert result.explain is not None and result.explain.stubbed_tool_calls == 0 and result.explain.dropped_tool_results == 0


async def test_second_compression_of_a_coding_session_pins_the_task() -> None:
    """On the second compression the head has decayed; the only task message is pinned verbatim, not summarised."""
    engine = make(context_length=64_000)
    original = minisweagent()
    first = await engine.compress(original[:60], trigger="manual", force=True)
    grown = [*first.messages, *original[60:]]
    second = await engine.compress(grown, trigger="manual", force=True)
    assert second.outcome == "compressed" and second.explain is not None
    assert second.explain.head_end == 1  # protect_first_n decayed to 0: the system prompt only
    assert [m.role for m in second.messages[:3]] == ["system", "assistant", "user"]
    assert second.messages[2] == original[1]
    assert is_handoff(second.messages[1]) and not second.explain.merged
    assert sum(1 for m in second.messages if is_handoff(m)) == 1
    assert _valid(second.messages)


async def test_previous_summary_is_the_newest_handoff_inside_the_summarised_span() -> None:
    """A handoff still in the verbatim tail is left alone; the one being summarised is the PREVIOUS SUMMARY."""
    from agent.context._reassemble import assemble

    older = assemble([Message(role="system", content="s")], [assistant("x")], "## Goal\nolder goal", has_real_user=True).messages[1]
    newer = assemble([Message(role="system", content="s")], [assistant("x")], "## Goal\nnewer goal", has_real_user=True).messages[1]
    body = [m for m in taubench()[1:] if m.role != "system"]
    messages = [Message(role="system", content="s"), older, *body, newer, assistant("ok, continuing"), user("go on")]
    summarizer = ScriptedSummarizer()
    engine = make(summarizer=summarizer, context_length=16_000, protect_last_n=3)
    engine.state.compression_count = 1
    result = await engine.compress(messages, trigger="manual", force=True)
    assert result.outcome == "compressed"
    assert summarizer.requests[0].previous_summary == "## Goal\nolder goal"
    assert newer in result.messages and older not in result.messages
