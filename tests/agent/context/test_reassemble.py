"""Reassembly: summary role, merge, framing, metadata off the wire, system note (docs/design.md §3.5 step 6)."""
from __future__ import annotations

import pytest

from agent.context._handoff import (
    END_MARKER,
    MERGED_PRIOR_HEADER,
    SUMMARY_PREFIX,
    SYSTEM_NOTE,
    frame_summary,
    handoff_text,
    is_handoff,
    newest_handoff,
    strip_framing,
    strip_sections,
    without_handoff,
)
from agent.context._reassemble import assemble, choose_role
from agent.messages import Message, TextPart, assistant, from_wire, system, to_wire, tool_result, user
from tests.agent.context.compressor_helpers import call


@pytest.mark.parametrize(
    ("prev", "nxt", "has_user", "expected"),
    [
        ("system", "assistant", True, "user"),  # after system prefer assistant, but it collides with next
        ("system", "user", True, "assistant"),
        ("assistant", "assistant", True, "user"),
        ("tool", "user", True, "assistant"),
        ("user", "user", True, "assistant"),
        ("assistant", "user", True, None),  # both collide: merge
        ("user", "assistant", True, None),
        ("system", "assistant", False, "user"),  # no real user turn: must be user
        ("user", "assistant", False, None),
        (None, None, True, "assistant"),
    ],
)
def test_choose_role(prev: str | None, nxt: str | None, has_user: bool, expected: str | None) -> None:
    """The summary role never repeats a neighbour's role; None means merge."""
    def message(role: str | None) -> Message | None:
        return None if role is None else Message(role=role, content="x")  # type: ignore[arg-type]

    assert choose_role(message(prev), message(nxt), has_real_user=has_user) == expected


def test_standalone_summary_is_framed_flagged_and_off_the_wire() -> None:
    """A standalone summary carries the prefix, the END marker and in-process flags that to_wire drops."""
    result = assemble([system("sys")], [assistant("next")], "## Goal\nship it", has_real_user=True)
    summary = result.messages[1]
    assert (result.role, result.merged, result.summary_index) == ("user", False, 1)
    assert summary.text.startswith(SUMMARY_PREFIX) and summary.text.endswith(END_MARKER)
    assert "## Goal\nship it" in summary.text
    assert summary.compressed_summary and summary.summary_has_user_turn
    assert to_wire(summary) == {"role": "user", "content": summary.text}
    assert result.messages[0].text == "sys\n\n" + SYSTEM_NOTE


def test_merge_into_first_tail_message_when_both_roles_collide() -> None:
    """With assistant before and an assistant-like collision after, the summary merges into the tail's first message."""
    tail = [user("latest"), assistant("a")]
    result = assemble([system("s"), user("q"), assistant("old")], tail, "body", has_real_user=True)
    merged = result.messages[3]
    assert result.merged and merged.role == "user"
    assert merged.text.startswith(MERGED_PRIOR_HEADER) and merged.text.endswith("latest")
    assert merged.compressed_summary
    assert without_handoff(merged) == user("latest")
    assert is_handoff(merged) and handoff_text(merged).startswith(SUMMARY_PREFIX)


def test_merge_into_a_tool_call_message_keeps_the_calls() -> None:
    """Merging into an assistant message with tool calls keeps the calls and delimits the summary."""
    calling = Message(role="assistant", content=None, tool_calls=(call("a"),))
    result = assemble([system("s"), user("q")], [calling, tool_result("a", "ok")], "body", has_real_user=True)
    assert result.merged
    assert result.messages[2].tool_calls == (call("a"),)
    assert result.messages[2].text.startswith(MERGED_PRIOR_HEADER)


def test_framing_is_idempotent() -> None:
    """Framing an already framed summary does not double the prefix or the END marker."""
    once = frame_summary("body")
    assert frame_summary(once) == once
    assert frame_summary(SUMMARY_PREFIX + "\n" + SUMMARY_PREFIX + "\nbody\n" + END_MARKER) == once
    assert strip_framing(once) == "body"


def test_system_note_is_added_once() -> None:
    """Compressing twice leaves one compaction note in the system prompt, also for part lists."""
    first = assemble([system("sys")], [assistant("n")], "a", has_real_user=True).messages[0]
    second = assemble([first], [assistant("n")], "b", has_real_user=True).messages[0]
    assert second.text.count(SYSTEM_NOTE) == 1
    parts = Message(role="system", content=(TextPart("sys"),))
    noted = assemble([parts], [assistant("n")], "a", has_real_user=True).messages[0]
    assert noted.content == (TextPart("sys"), TextPart("\n\n" + SYSTEM_NOTE))


def test_handoff_is_recognised_after_a_reload() -> None:
    """After a round trip through the wire the flags are gone but the handoff is still found by its prefix."""
    result = assemble([system("s")], [assistant("n")], "## Goal\nG", has_real_user=True)
    reloaded = [from_wire(to_wire(m)) for m in result.messages]
    assert not reloaded[1].compressed_summary
    assert newest_handoff(reloaded) == 1
    assert handoff_text(reloaded[1]) == result.messages[1].text


def test_strip_sections_removes_only_named_blocks() -> None:
    """Named `## title` blocks are removed up to the next heading; other headings stay."""
    text = "## Goal\nG\n\n## Fact ledger\n- port 8443\n\n## Blocked\nNone."
    assert strip_sections(text, ["Fact ledger"]) == "## Goal\nG\n\n## Blocked\nNone."


def test_summary_goes_before_a_pinned_message_rather_than_merging() -> None:
    """With a pinned task between system and an assistant tail, the summary sits before the task, unmerged."""
    task = user("the task")
    tail = [Message(role="assistant", content="step", tool_calls=(call("a"),)), tool_result("a", "ok")]
    result = assemble([system("s")], tail, "body", has_real_user=True, pinned=[task])
    assert [m.role for m in result.messages] == ["system", "assistant", "user", "assistant", "tool"]
    assert (result.merged, result.summary_index) == (False, 1)
    assert result.messages[2] == task and result.messages[3] == tail[0]


def test_summary_after_pinned_message_when_it_fits() -> None:
    """The chronological place (after the pinned message) wins when a role fits there."""
    task = user("the task")
    result = assemble([system("s")], [user("a newer line")], "body", has_real_user=True, pinned=[task])
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "user"]
    assert result.messages[1] == task
