"""Tool pairing by position, tool-pair sanitising and image stripping (docs/design.md §3.5 steps 7-8)."""
from __future__ import annotations

from agent.context._images import IMAGE_PLACEHOLDER, strip_old_images
from agent.context._pairing import group_start, link_tool_results
from agent.context._sanitize import STUB_RESULT, sanitize_tool_pairs
from agent.messages import ImagePart, Message, TextPart, assistant, tool_result, user
from tests.agent.context.compressor_helpers import call, taubench


def test_links_pair_reused_ids_by_position() -> None:
    """A reused tool_call id pairs each result with the call right before it, not a global id."""
    messages = [
        user("hi"),
        assistant(None, tool_calls=[call("call_1", "first")]),
        tool_result("call_1", "one"),
        assistant(None, tool_calls=[call("call_1", "second")]),
        tool_result("call_1", "two"),
    ]
    links = link_tool_results(messages)
    assert {index: (link.call_index, link.call.name) for index, link in links.items()} == {2: (1, "first"), 4: (3, "second")}


def test_links_skip_orphans_and_second_answers() -> None:
    """A result after a user turn, with an unknown id, or answering twice is not linked."""
    messages = [
        assistant(None, tool_calls=[call("a")]),
        tool_result("a", "ok"),
        tool_result("a", "again"),
        tool_result("zzz", "unknown"),
        user("u"),
        tool_result("a", "late"),
    ]
    assert sorted(link_tool_results(messages)) == [1]


def test_links_on_real_reused_ids() -> None:
    """Every tool result of the τ-bench session (which reuses ids) is linked to a call named like it."""
    messages = taubench()
    links = link_tool_results(messages)
    tool_indices = [i for i, m in enumerate(messages) if m.role == "tool"]
    assert sorted(links) == tool_indices
    assert all(links[i].call.name == messages[i].name for i in tool_indices)


def test_group_start_moves_to_parent() -> None:
    """A boundary inside a tool group moves back to the parent assistant message."""
    messages = [user("u"), assistant(None, tool_calls=[call("a"), call("b")]), tool_result("a", "1"), tool_result("b", "2"), user("v")]
    assert [group_start(messages, i) for i in range(5)] == [0, 1, 1, 1, 4]


def test_sanitize_drops_orphans_and_stubs_missing_results() -> None:
    """Orphan results go, missing results get a stub right after their call's group."""
    messages = [
        Message(role="system", content="s"),
        tool_result("ghost", "orphan"),
        assistant("doing", tool_calls=[call("a"), call("b")]),
        tool_result("b", "b done"),
        tool_result("b", "b twice"),
        user("next"),
    ]
    out, report = sanitize_tool_pairs(messages)
    assert [(m.role, m.tool_call_id, m.text) for m in out] == [
        ("system", None, "s"),
        ("assistant", None, "doing"),
        ("tool", "b", "b done"),
        ("tool", "a", STUB_RESULT),
        ("user", None, "next"),
    ]
    assert (report.dropped_results, report.stubbed_calls) == (2, 1)


def test_sanitize_keeps_a_valid_session_unchanged() -> None:
    """A valid real session passes through untouched."""
    messages = list(taubench(1))
    out, report = sanitize_tool_pairs(messages)
    assert out == messages
    assert (report.dropped_results, report.stubbed_calls) == (0, 0)


def test_old_images_become_placeholders() -> None:
    """Images before the newest image-bearing message become text; the newest keeps its payload."""
    png = ImagePart(url="data:image/png;base64," + "A" * 1000)
    messages = [
        Message(role="user", content=(TextPart("look"), png)),
        assistant("nice"),
        Message(role="user", content=(png, png)),
        assistant("and this"),
        Message(role="user", content=(TextPart("last"), png)),
    ]
    out, stripped = strip_old_images(messages)
    assert stripped == 3
    named = TextPart("[Attached image (image/png, 750 bytes) — removed by context compression]")
    assert out[0].content == (TextPart("look"), named)
    assert out[2].content == (named, named)
    assert out[4] == messages[4]


def test_an_image_by_link_keeps_the_generic_placeholder() -> None:
    """A non-data URL names no type or size."""
    linked = ImagePart(url="https://example.com/cat.png")
    out, _ = strip_old_images([Message(role="user", content=(linked,)), Message(role="user", content=(linked,))])
    assert out[0].content == (TextPart(IMAGE_PLACEHOLDER),)
