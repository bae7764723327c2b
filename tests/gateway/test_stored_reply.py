"""`stored_reply`: a resumed turn that is in the history already is answered from it, not run (and stored) again."""
from __future__ import annotations

from agent.messages import Message, ToolCall, assistant, system, user
from gateway.sessions.turns import stored_reply

ASKED = user("what is 2+2?")


def test_the_answered_last_user_message_gives_its_reply() -> None:
    calls = (ToolCall(id="c1", name="calc", arguments="{}"),)
    history = [system("s"), user("hi"), assistant("hello"), ASKED, Message(role="assistant", tool_calls=calls),
               Message(role="tool", content="4", tool_call_id="c1"), assistant("4")]
    assert stored_reply(history, ASKED) == "4"


def test_nothing_when_the_turn_was_not_stored_or_not_finished() -> None:
    assert stored_reply([system("s"), user("hi"), assistant("hello")], ASKED) is None  # another message is last
    assert stored_reply([system("s"), ASKED], ASKED) is None  # stored, not answered yet
    calls = (ToolCall(id="c1", name="calc", arguments="{}"),)
    assert stored_reply([ASKED, Message(role="assistant", tool_calls=calls)], ASKED) is None  # mid tool call
    assert stored_reply([], ASKED) is None
