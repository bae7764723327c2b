"""Which tool result answers which tool call, by position.

Owns the tool-group model every stage shares: an assistant message with
`tool_calls` followed by the contiguous tool messages that answer it. Results
are matched to calls inside their group only, never by a session-wide id,
because real sessions reuse `tool_call` ids across turns. Pure functions.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.messages import Message, ToolCall


@dataclass(frozen=True, slots=True)
class ToolLink:
    """A tool result at `result_index` answers `call` of the assistant at `call_index`."""

    result_index: int
    call_index: int
    call: ToolCall


def link_tool_results(messages: Sequence[Message]) -> dict[int, ToolLink]:
    """Map each answering tool result's index to its call; orphans and duplicates are absent.

    A result answers the first still-unanswered call with its id in the
    nearest preceding assistant message, provided only tool messages lie in
    between. Anything else (a result after a user turn, a second answer to the
    same call, an unknown id) is not linked.
    """
    links: dict[int, ToolLink] = {}
    parent = -1
    open_calls: list[ToolCall] = []
    for index, message in enumerate(messages):
        if message.role == "tool":
            if parent < 0:
                continue
            for position, call in enumerate(open_calls):
                if call.id == message.tool_call_id:
                    links[index] = ToolLink(index, parent, call)
                    del open_calls[position]
                    break
            continue
        if message.role == "assistant" and message.tool_calls:
            parent, open_calls = index, list(message.tool_calls)
        else:
            parent, open_calls = -1, []
    return links


def group_start(messages: Sequence[Message], index: int) -> int:
    """Move `index` back from inside a tool group to its parent assistant message.

    Used for a boundary: the message at `index` starts a side; if it is a tool
    result, the whole group (parent + results) moves to that side.
    """
    if index >= len(messages) or messages[index].role != "tool":
        return index
    check = index
    while check > 0 and messages[check].role == "tool":
        check -= 1
    if messages[check].role == "assistant" and messages[check].tool_calls:
        return check
    return index


def group_end(messages: Sequence[Message], index: int) -> int:
    """Move a boundary `index` forward past tool results that belong to the group before it."""
    while index < len(messages) and messages[index].role == "tool":
        index += 1
    return index
