"""The prune passes (docs/design.md §3.5 step 1, §3.8) on realistic tool traffic."""
from __future__ import annotations

import json

import pytest

from agent.context._pairing import link_tool_results
from agent.context._prune import cap_oversized, proactive_candidates, prune_old, relieve_tail_pressure
from agent.context._toolsummary import DUPLICATE_PLACEHOLDER, summarize_tool_result, truncate_arguments
from agent.messages import ToolCall, assistant, tool_result, user
from agent.tokens import estimate_counter
from tests.agent.context.compressor_helpers import call, minisweagent, taubench


@pytest.mark.parametrize(
    ("tool_call", "content", "expected"),
    [
        (
            ToolCall("c", "bash", '{"command": "npm test"}'),
            "<returncode>0</returncode>\n<output>\n" + "ok\n" * 45 + "</output>",
            "[bash] ran `npm test` -> exit 0, 48 lines output [output pruned by context compression]",
        ),
        (
            ToolCall("c", "read_file", '{"path": "config.py"}'),
            "x" * 3400,
            "[read_file] read config.py from line 1 (3,400 chars) [output pruned by context compression]",
        ),
        (
            ToolCall("c", "search_files", '{"query": "compress", "path": "agent/"}'),
            "a.py:1\nb.py:2\nc.py:3",
            "[search_files] search for 'compress' in agent/ -> 3 lines (20 chars) [output pruned by context compression]",
        ),
        (
            ToolCall("c", "get_user_details", '{"user_id": "omar_davis_3817"}'),
            '{"name": "Omar"}',
            '[get_user_details](user_id=omar_davis_3817) -> 1 lines, 16 chars [output pruned by context compression]',
        ),
        (
            ToolCall("c", "bash", '{"command": "python x.py"}'),
            "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\nValueError: bad port 99999\n</output>",
            "[bash] ran `python x.py` -> exit 1, 5 lines output; error: ValueError: bad port 99999 "
            "[output pruned by context compression]",
        ),
    ],
)
def test_one_line_summaries_are_informative(tool_call: ToolCall, content: str, expected: str) -> None:
    """A pruned result still says what ran, how it ended and how big it was."""
    assert summarize_tool_result(tool_call, content) == expected


def test_argument_truncation_stays_valid_json() -> None:
    """Arguments over 500 chars shrink their long strings and stay valid JSON; invalid JSON is left alone."""
    arguments = json.dumps({"path": "/srv/app.py", "content": "x" * 5000, "mode": 3})
    shrunk = truncate_arguments(arguments, limit=500)
    assert json.loads(shrunk) == {"path": "/srv/app.py", "content": "x" * 200 + "...[truncated]", "mode": 3}
    broken = '{"content": "' + "y" * 900
    assert truncate_arguments(broken, limit=500) == broken


def test_prune_old_on_a_real_coding_session() -> None:
    """Before the tail: long results become one line, duplicates a placeholder; the tail is untouched."""
    messages = list(minisweagent())
    end = 80
    out, touched = prune_old(messages, link_tool_results(messages), end=end, min_prune_chars=200)
    assert out[end:] == messages[end:]
    for index, kind in touched.items():
        assert index < end
        if kind == "one_line":
            assert out[index].text.startswith("[bash] ran `")
        elif kind == "duplicate":
            assert out[index].text == DUPLICATE_PLACEHOLDER
    long_results = [i for i in range(end) if messages[i].role == "tool" and len(messages[i].text) > 200]
    assert sorted(i for i, k in touched.items() if k in ("one_line", "duplicate")) == long_results
    assert out[3].text == "[bash] ran `ls -la` -> exit 0, 37 lines output [output pruned by context compression]"


def test_duplicates_compare_against_the_tail() -> None:
    """An old output identical to one inside the tail becomes the duplicate placeholder."""
    same = "line\n" * 100
    messages = [
        assistant(None, tool_calls=[call("a")]), tool_result("a", same),
        assistant(None, tool_calls=[call("b")]), tool_result("b", same),
    ]
    out, touched = prune_old(messages, link_tool_results(messages), end=2, min_prune_chars=200)
    assert (out[1].text, touched) == (DUPLICATE_PLACEHOLDER, {1: "duplicate"})


def test_long_arguments_outside_the_tail_are_truncated() -> None:
    """Tool-call arguments over 500 chars outside the tail are shrunk, inside the tail kept."""
    big = json.dumps({"command": "cat <<EOF > f.py\n" + "print(1)\n" * 200 + "EOF"})
    messages = [assistant(None, tool_calls=[call("a", arguments=big)]), tool_result("a", "ok")] * 2
    out, touched = prune_old(messages, link_tool_results(messages), end=2, min_prune_chars=200)
    assert touched == {0: "arguments"}
    assert len(out[0].tool_calls[0].arguments) < 300
    assert out[2] == messages[2]


def test_tail_pressure_downgrades_biggest_old_results_first() -> None:
    """Over 1.5x budget, the biggest tool outputs of the tail (not the newest 3 messages) become one line."""
    counter = estimate_counter()
    tail = [
        assistant("a", tool_calls=[call("1")]), tool_result("1", "x" * 8000),
        assistant("b", tool_calls=[call("2")]), tool_result("2", "y" * 2000),
        assistant("c", tool_calls=[call("3")]), tool_result("3", "z" * 8000),
        user("now?"),
    ]
    counts = [counter.count_message(m) for m in tail]
    out, new_counts, touched = relieve_tail_pressure(
        tail, counts, link_tool_results(tail), offset=10, budget=1500, min_prune_chars=200, counter=counter
    )
    assert touched == {11: "pressure", 13: "pressure"}  # index 15 is within the newest 3
    assert out[5] == tail[5]
    assert sum(new_counts) <= 1500 * 1.5


def test_oversized_result_keeps_head_and_tail() -> None:
    """A result bigger than the whole tail budget keeps its start and end around an elision marker."""
    counter = estimate_counter()
    text = "HEAD" + "m" * 100_000 + "TAIL"
    tail = [assistant(None, tool_calls=[call("1")]), tool_result("1", text), user("x" * 9000)]
    out, counts, touched = cap_oversized(tail, [counter.count_message(m) for m in tail], offset=0, budget=2000, counter=counter)
    assert touched == {1: "oversize"}
    assert out[2] == tail[2]  # only tool outputs are cut
    assert out[1].text.startswith("HEAD") and out[1].text.endswith("TAIL")
    assert "chars of this tool output elided" in out[1].text
    assert counts[1] <= 2000
    small = [assistant(None, tool_calls=[call("1")]), tool_result("1", "y" * 9000)]
    assert cap_oversized(small, [counter.count_message(m) for m in small], offset=0, budget=2000, counter=counter)[2] == {}


def test_proactive_candidates_only_touch_big_results() -> None:
    """Proactive pruning one-lines only results over the size floor and reports the reclaim."""
    messages = list(taubench())
    out, touched, reclaimed = proactive_candidates(messages, link_tool_results(messages), end=len(messages), min_result_chars=800)
    assert all(len(messages[i].text) > 800 for i in touched)
    assert reclaimed > 0 and len(touched) >= 1
    assert [m for i, m in enumerate(out) if i not in touched] == [m for i, m in enumerate(messages) if i not in touched]
