"""MCP tool output in the prune passes: informative summaries of `server__tool` calls, `prune_exclude_tools`."""
from __future__ import annotations

from agent.context._pairing import link_tool_results
from agent.context._prune import proactive_candidates, prune_old, relieve_tail_pressure
from agent.context._toolsummary import summarize_tool_result
from agent.messages import Message, ToolCall, assistant, tool_result, user
from agent.tokens import estimate_counter
from tests.agent.context.compressor_helpers import call, make


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


def _mcp_session(results: int) -> list[Message]:
    """A chat whose agent called two MCP tools in turn, each result ~6,000 chars."""
    out: list[Message] = [Message(role="system", content="SYS")]
    for n in range(results):
        name = "notes__recall" if n % 2 else "web__search"
        out.append(user(f"question {n}"))
        out.append(assistant(None, tool_calls=[call(f"c{n}", name, f'{{"query": "topic {n}"}}')]))
        out.append(tool_result(f"c{n}", f"result {n}: " + "finding " * 750, name=name))
        out.append(assistant(f"answer {n}"))
    return out


def test_the_compressor_passes_prune_exclude_tools_to_the_proactive_prune() -> None:
    """Through the engine: `compression.prune_exclude_tools` results stay verbatim, the others become named one-liners."""
    original = _mcp_session(10)
    engine = make(proactive_prune_tokens=1000, proactive_prune_min_result_chars=3000,
                  proactive_prune_min_reclaim_tokens=100, prune_exclude_tools=["notes__recall"], protect_last_n=4)
    result = engine.proactive_prune(original, prompt_tokens=50_000)
    assert result.outcome == "compressed"
    changed = [(a, b) for a, b in zip(original, result.messages) if a != b]
    assert changed and all(a.name == "web__search" for a, _ in changed)
    assert all(b.text.startswith("[web__search] search for 'topic ") for _, b in changed)
    assert [m.text for m in result.messages if m.name == "notes__recall"] == [
        m.text for m in original if m.name == "notes__recall"
    ]
