"""Summary prompt, input cap, think stripping and the deterministic fallback summary (docs/design.md §3.5-3.6)."""
from __future__ import annotations

from agent.context._fallback import FALLBACK_MAX_CHARS, fallback_summary
from agent.context._summarizer import (
    HANDOFF_HEADINGS,
    SUMMARY_INPUT_MAX_CHARS,
    SummaryRequest,
    build_prompt,
    cap_input,
    serialize_turns,
    strip_think,
)
from agent.messages import assistant, tool_result, user
from tests.agent.context.compressor_helpers import call, minisweagent, taubench


def test_prompt_has_every_handoff_heading_and_the_budget() -> None:
    """The first-time prompt asks for the structured template and states the target size."""
    prompt = build_prompt(SummaryRequest(turns=tuple(taubench()[1:10]), previous_summary=None, budget_tokens=2500))
    assert [m.role for m in prompt] == ["system", "user"]
    for title, _ in HANDOFF_HEADINGS:
        assert f"## {title}\n" in prompt[1].text
    assert "about 2,500 tokens" in prompt[1].text
    assert "PREVIOUS SUMMARY" not in prompt[1].text


def test_iterative_prompt_sends_previous_summary_for_an_update() -> None:
    """With a previous summary the prompt asks for an update, not a rewrite, and carries it."""
    prompt = build_prompt(SummaryRequest(turns=(user("more"),), previous_summary="## Goal\nold goal", budget_tokens=2000))
    text = prompt[1].text
    assert "PREVIOUS SUMMARY:\n## Goal\nold goal" in text
    assert "Do not rewrite it from scratch" in text and "NEW TURNS:" in text


def test_serialisation_labels_roles_and_tool_calls() -> None:
    """Turns are serialised with role labels, tool calls and their arguments."""
    text = serialize_turns([user("fix it"), assistant("ok", tool_calls=[call("a", arguments='{"command": "make"}')]), tool_result("a", "done")])
    assert text == '[user]: fix it\n\n[assistant]: ok\n  -> called bash({"command": "make"})\n\n[tool result]: done'


def test_input_cap_keeps_head_and_tail() -> None:
    """A serialised span over 160,000 chars keeps its start and its end with an elision note."""
    text = "S" + "x" * 400_000 + "E"
    capped = cap_input(text)
    assert capped.startswith("S") and capped.endswith("E")
    assert SUMMARY_INPUT_MAX_CHARS <= len(capped) < SUMMARY_INPUT_MAX_CHARS + 200
    assert "elided to fit the summariser" in capped
    assert cap_input("short") == "short"


def test_think_blocks_are_stripped() -> None:
    """<think> blocks (closed or cut off) never reach the summary."""
    assert strip_think("<think>plan\nsecret</think>\n## Goal\nG") == "## Goal\nG"
    assert strip_think("## Goal\nG\n<THINKING>x</THINKING>") == "## Goal\nG"
    assert strip_think("## Goal\nG\n<think>never closed") == "## Goal\nG"
    assert strip_think("<think>only thoughts</think>") == ""


def test_fallback_summary_keeps_continuity_anchors() -> None:
    """The fallback names the task, actions, tools, files and exact errors, within 8,000 chars."""
    messages = minisweagent()
    text = fallback_summary(messages[1:90], None)
    assert len(text) <= FALLBACK_MAX_CHARS
    assert "## Historical task snapshot\n<pr_description>" in text
    assert "bash x44" in text
    assert "- django/db/models/fields/related_descriptors.py" in text
    assert "- AttributeError: 'NoneType' object has no attribute 'name'" in text
    assert "## Completed actions\n- said: THOUGHT: I need to understand the structure" in text


def test_fallback_summary_carries_the_previous_summary_bounded() -> None:
    """A previous summary is carried over (at most 3,000 chars) and the whole stays within 8,000."""
    text = fallback_summary(list(taubench()[1:40]) * 20, "## Goal\n" + "keep me " * 1000)
    assert "## Previous summary (carried over)\n## Goal\nkeep me" in text
    assert len(text) <= FALLBACK_MAX_CHARS
    block = text.split("## Previous summary (carried over)\n", 1)[1].split("\n\n## ", 1)[0]
    assert len(block) <= 3000


def test_fallback_for_a_group_chat_names_participants_and_questions() -> None:
    """In a busy group chat the fallback lists who spoke and the questions, not every short line."""
    from tests.agent.context.compressor_helpers import irc

    messages = irc()[:600]
    text = fallback_summary(messages, None)
    assert "## Participants\nogra (" in text
    asks = text.split("## User requests and questions\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert asks and all("?" in line or len(line) >= 60 for line in asks)
