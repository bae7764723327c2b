"""MCP tool output in the prune passes: informative summaries of `server__tool` calls, `prune_exclude_tools`."""
from __future__ import annotations

from agent.context._pairing import link_tool_results
from agent.context._prune import proactive_candidates, prune_old, relieve_tail_pressure
from agent.context._toolsummary import summarize_tool_result
from agent.messages import Message, ToolCall, assistant, tool_result, user
from agent.tokens import estimate_counter
from tests.agent.context.compressor_helpers import call


def test_mcp_tool_summaries_name_the_tool_and_its_arguments() -> None:
    """`server__tool` is summarised by its own tool name, keeping the public name and the arguments."""
    search = summarize_tool_result(ToolCall("c", "web__search", '{"query": "oslo weather"}'), "a\nb\nc")
    assert search == "[web__search] search for 'oslo weather' -> 3 lines (5 chars) [output pruned by context compression]"
    other = summarize_tool_result(ToolCall("c", "tickets__get_issue", '{"id": 42, "repo": "chorus"}'), "x" * 900)
    assert other == "[tickets__get_issue](id=42, repo=chorus) -> 1 lines, 900 chars [output pruned by context compression]"


def _session() -> list[Message]:
    return [
        user("remember and search"),
        assistant(None, tool_calls=[call("1", "notes__recall", '{"topic": "deploy"}')]), tool_result("1", "N" * 5000, name="notes__recall"),
        assistant(None, tool_calls=[call("2", "web__search", '{"query": "q"}')]), tool_result("2", "W" * 5000, name="web__search"),
        assistant("done"), user("next"),
    ]


def test_excluded_tools_survive_the_old_prune_and_the_proactive_prune() -> None:
    """Results of a tool in `prune_exclude_tools` stay verbatim; other long results are pruned."""
    messages = _session()
    links = link_tool_results(messages)
    keep = frozenset({"notes__recall"})
    out, touched = prune_old(messages, links, end=len(messages) - 2, min_prune_chars=200, keep=keep)
    assert touched == {4: "one_line"}
    assert out[2] == messages[2]
    out, touched, _ = proactive_candidates(messages, links, end=len(messages) - 2, min_result_chars=1000, keep=keep)
    assert touched == {4: "one_line"} and out[2] == messages[2]
    _, everything = prune_old(messages, links, end=len(messages) - 2, min_prune_chars=200)
    assert sorted(everything) == [2, 4]


def test_excluded_tools_survive_tail_pressure() -> None:
    """Under tail pressure the excluded tool's result is never downgraded."""
    counter = estimate_counter()
    tail = [*_session(), user("a"), user("b"), user("c")]
    counts = [counter.count_message(m) for m in tail]
    out, _, touched = relieve_tail_pressure(
        tail, counts, link_tool_results(tail), offset=0, budget=300, min_prune_chars=200, counter=counter,
        keep=frozenset({"notes__recall"}),
    )
    assert touched == {4: "pressure"}
    assert out[2] == tail[2]
