"""The hard message limit bounds the tail by count: a compression past it ends below it (docs/design.md §2.3)."""
from __future__ import annotations

from agent.context._boundaries import find_split
from agent.messages import Message, assistant, system, tool_result, user
from agent.tokens import default_counter, estimate_counter
from tests.agent.context.compressor_helpers import ScriptedSummarizer, call, irc, make, minisweagent, taubench

COUNTER = estimate_counter()


def _group_chat(lines: int) -> list[Message]:
    return [system("you are a bot"), *irc()[:lines]]


def test_count_bound_caps_a_tail_the_token_budget_would_not() -> None:
    """Hundreds of short lines fit the token budget; `max_tail_messages` still caps the tail."""
    messages = _group_chat(400)
    unbounded = find_split(messages, protect_first_n=0, budget=50_000, protect_last_n=20, min_tail_user_messages=1,
                           counter=COUNTER)
    bounded = find_split(messages, protect_first_n=0, budget=50_000, protect_last_n=20, min_tail_user_messages=1,
                         counter=COUNTER, max_tail_messages=30)
    assert unbounded.tail_start == 1
    assert len(messages) - bounded.tail_start == 30


def test_count_bound_never_splits_a_tool_group_and_pins_the_old_user_message() -> None:
    """The bound moves back to a whole tool group; an older task message is pinned, not dragged into the tail."""
    messages: list[Message] = [system("s"), user("the task: tidy the repo")]
    for index in range(30):
        messages.append(assistant(None, tool_calls=[call(f"c{index}a"), call(f"c{index}b")]))
        messages.append(tool_result(f"c{index}a", "ok"))
        messages.append(tool_result(f"c{index}b", "ok"))
    split = find_split(messages, protect_first_n=0, budget=50_000, protect_last_n=20, min_tail_user_messages=1,
                       counter=COUNTER, max_tail_messages=10)
    assert messages[split.tail_start].role == "assistant"
    assert len(messages) - split.tail_start <= 12
    assert split.pinned == (1,)


async def test_compression_past_the_limit_ends_below_it_for_every_trigger() -> None:
    """hygiene, /compress and preflight past the limit all leave fewer messages than the limit."""
    limit = 60
    for trigger in ("hygiene", "manual", "preflight"):
        engine = make(summarizer=ScriptedSummarizer(default="## Goal\nchatter"), hygiene_hard_message_limit=limit)
        messages = _group_chat(limit + 5)
        assert engine.should_compress_preflight(messages, ())
        result = await engine.compress(messages, trigger=trigger, force=trigger == "manual")  # type: ignore[arg-type]
        assert result.outcome == "compressed", result.reason
        assert len(result.messages) < limit
        assert result.messages[-1] == messages[-1]  # the latest line verbatim


async def test_hygiene_at_85_percent_ends_under_the_threshold_on_real_sessions() -> None:
    """A real session at ~88% of its window is compressed under the threshold (and so under 85%)."""
    counter = default_counter()
    for messages in (minisweagent(), taubench(), (system("s"), *irc())):
        window = int(counter.count_messages(messages) / 0.88)
        engine = make(summarizer=ScriptedSummarizer(), context_length=window, counter=counter)
        result = await engine.compress(messages, trigger="hygiene")
        assert result.outcome == "compressed"
        assert result.tokens_after < engine.threshold_tokens <= int(window * 0.85)
