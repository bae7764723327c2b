"""Which stored messages become bubbles of the web chat's transcript, and how."""
from __future__ import annotations

from adapters.web import TranscriptLine
from agent.context._handoff import frame_summary, merged_content
from agent.messages import ImagePart, Message, TextPart, ToolCall, assistant, system, tool_result, user
from gateway.platforms.web_transcript import MAX_THUMBNAIL_CHARS, transcript_line, within_budget

SMALL = "data:image/png;base64,iVBORw0KGgo="
LARGE = "data:image/png;base64," + "A" * MAX_THUMBNAIL_CHARS


def test_user_and_assistant_text_are_bubbles_tools_and_system_lines_are_not() -> None:
    call = ToolCall("c1", "memory", "{}")
    lines = [transcript_line(m) for m in (system("be nice"), user("hi"), assistant(None, tool_calls=[call]),
                                          tool_result("c1", "done"), assistant("hello"))]
    assert lines == [None, TranscriptLine("user", "hi"), None, None, TranscriptLine("assistant", "hello")]


def test_pictures_are_kept_as_data_urls_up_to_the_thumbnail_limit() -> None:
    message = Message(role="user", content=(TextPart("look"), ImagePart(SMALL), ImagePart(LARGE),
                                            ImagePart("https://example.org/x.png")))
    assert transcript_line(message) == TranscriptLine("user", "look", images=(SMALL,), files=("picture",))


def test_a_compression_summary_is_no_bubble_and_a_merged_message_shows_its_own_text() -> None:
    summary = frame_summary("the user asked about trains")
    merged = user(merged_content(summary, "and what about buses?"))
    assert transcript_line(user(summary)) is None
    assert transcript_line(merged) == TranscriptLine("user", "and what about buses?")


def test_the_pictures_of_one_history_fit_a_budget_newest_first() -> None:
    """Older pictures beyond the budget are named instead; a smaller older one still fits what is left."""
    old, middle, new = "data:image/png;base64," + "a" * 50, "data:image/png;base64," + "b" * 500, SMALL
    lines = [TranscriptLine("user", "1", images=(old,)), TranscriptLine("user", "2", images=(middle,)),
             TranscriptLine("user", "3", images=(new,))]
    kept = within_budget(lines, budget=len(new) + len(old) + 10)
    assert [(line.images, line.files) for line in kept] == [((old,), ()), ((), ("picture",)), ((new,), ())]
