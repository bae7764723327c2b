"""Head protection, the token-budget tail and its guarantees, tool-group alignment (docs/design.md §3.5 steps 2-4)."""
from __future__ import annotations

from agent.context._boundaries import find_split, head_size, widen_tail
from agent.messages import Message, assistant, system, tool_result, user
from agent.tokens import estimate_counter
from tests.agent.context.compressor_helpers import call, chat, minisweagent, taubench

COUNTER = estimate_counter()


def split(messages: list[Message] | tuple[Message, ...], *, first: int = 3, budget: int = 2000, last: int = 20, users: int = 1):  # type: ignore[no-untyped-def]
    return find_split(
        messages, protect_first_n=first, budget=budget, protect_last_n=last, min_tail_user_messages=users, counter=COUNTER
    )


def test_head_is_system_plus_first_n_and_never_splits_a_group() -> None:
    """The head holds the system prompt and protect_first_n messages, extended past a tool group's results."""
    messages = minisweagent()
    assert head_size(messages, 3) == 4  # system, task, assistant call, its result
    assert head_size(messages, 2) == 4  # ends on the call: its result joins the head
    assert head_size(messages, 0) == 1  # decayed: the system prompt only


def test_tail_walk_respects_budget_and_floor() -> None:
    """The tail takes messages from the end until the budget is used, but at least min(protect_last_n, 8)."""
    messages = chat(40, words=20)  # ~35 tokens a message
    result = split(messages, budget=600)
    tail_tokens = sum(COUNTER.count_message(m) for m in messages[result.tail_start:])
    assert tail_tokens <= 600 and len(messages) - result.tail_start >= 8
    assert list(result.tail_tokens) == [COUNTER.count_message(m) for m in messages[result.tail_start:]]
    floor_only = split(messages, budget=1)
    assert len(messages) - floor_only.tail_start == 8
    assert len(messages) - split(messages, budget=1, last=5).tail_start == 5


def test_tail_never_starts_inside_a_tool_group() -> None:
    """A tail boundary on a tool result moves back to the assistant message that called it."""
    messages = [system("s"), user("go")]
    for n in range(12):
        messages += [assistant(f"step {n}", tool_calls=[call(f"c{n}a"), call(f"c{n}b")]), tool_result(f"c{n}a", "r" * 400), tool_result(f"c{n}b", "r" * 400)]
    messages.append(assistant("done"))
    for budget in range(50, 3000, 97):
        start = split(messages, budget=budget, last=1).tail_start
        assert messages[start].role != "tool", budget


def test_latest_user_message_far_back_is_pinned() -> None:
    """In a coding session whose only task message predates the tail, that message is pinned, not summarised."""
    messages = minisweagent()
    result = split(messages, first=0, budget=3000)
    assert result.head_end == 1
    assert result.pinned == (1,)
    assert 1 not in result.summarised()


def test_latest_user_message_near_the_tail_joins_it() -> None:
    """When including the latest user message costs at most one more budget, the tail grows to it."""
    messages = [*chat(10, words=100), user("the real question"), *[assistant(f"part {i} " * 30) for i in range(1)]]
    messages += [tool_result("x", "orphan")] if False else []
    result = split(messages, first=0, budget=100, last=1)
    assert result.tail_start <= len(messages) - 2
    assert messages[result.tail_start].role in ("user", "assistant")
    assert result.pinned == ()


def test_latest_assistant_with_text_is_in_the_tail() -> None:
    """The newest assistant message with text is always kept, even past the budget."""
    messages = [system("s"), user("u0"), assistant("old"), user("u1"), assistant("the latest answer " * 50)]
    for n in range(10):
        messages += [assistant(None, tool_calls=[call(f"c{n}")]), tool_result(f"c{n}", "r" * 40)]
    result = split(messages, first=0, budget=50, last=8)
    assert result.tail_start <= 4


def test_min_tail_user_messages_pulls_in_older_user_turns() -> None:
    """min_tail_user_messages=2 keeps two real user messages in the tail when they are close."""
    messages = chat(20, words=20)
    result = split(messages, first=0, budget=150, last=1, users=2)
    assert sum(1 for m in messages[result.tail_start:] if m.role == "user") >= 2


def test_widen_tail_moves_back_one_group() -> None:
    """Widening moves the tail start back over one whole tool group, and refuses to empty the middle."""
    messages = list(taubench())
    result = split(messages, first=3, budget=300, last=1)
    wider = widen_tail(messages, result, COUNTER)
    assert wider is not None and wider.tail_start < result.tail_start
    assert messages[wider.tail_start].role != "tool"
    assert len(wider.tail_tokens) == len(messages) - wider.tail_start
    tiny = [system("s"), user("a"), assistant("b"), user("c")]
    assert widen_tail(tiny, split(tiny, first=0, budget=1, last=2), COUNTER) is None
