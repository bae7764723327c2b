"""Tool-pair sanitising (docs/design.md §3.5 step 7): the list sent to a provider is always structurally valid.

Owns the last structural pass: every tool result directly follows the
assistant message whose call it answers; a result whose call is gone is
dropped; a call whose result is gone gets a stub result; a second answer to
one call is dropped. Pairs by position inside each group, never by a
session-wide id (real sessions reuse ids across turns). Pure function.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.messages import Message, ToolCall

STUB_RESULT = "[Result from earlier conversation — see the context summary above]"


@dataclass(frozen=True, slots=True)
class SanitizeReport:
    dropped_results: int = 0
    stubbed_calls: int = 0


def _stub(call: ToolCall) -> Message:
    return Message(role="tool", content=STUB_RESULT, tool_call_id=call.id)


def sanitize_tool_pairs(messages: Sequence[Message]) -> tuple[list[Message], SanitizeReport]:
    """Return a list where every tool call is answered exactly once, right after its assistant message."""
    out: list[Message] = []
    dropped = stubbed = 0
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            dropped += 1  # not inside any group: its call is gone
            continue
        out.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        open_calls = list(message.tool_calls)
        while index < len(messages) and messages[index].role == "tool":
            result = messages[index]
            index += 1
            for position, call in enumerate(open_calls):
                if call.id == result.tool_call_id:
                    out.append(result)
                    del open_calls[position]
                    break
            else:
                dropped += 1
        for call in open_calls:
            out.append(_stub(call))
            stubbed += 1
    return out, SanitizeReport(dropped_results=dropped, stubbed_calls=stubbed)
