"""Reassembly (docs/design.md §3.5 step 6): head + one handoff summary + the verbatim tail.

Owns the summary message: its role under the alternation rules (never two
same roles in a row; `user` when nothing else in the session is a real user
turn), the merge into the first tail message when both roles would collide,
the REFERENCE ONLY framing and END marker, the in-process metadata flags
(which never reach the wire), and the system-prompt note. Pure functions.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from agent.context._handoff import MERGED_DELIMITER, MERGED_PRIOR_HEADER, frame_summary, merged_content, with_system_note
from agent.messages import Message, TextPart

SummaryRole: TypeAlias = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Assembly:
    """The reassembled list; `summary_index` points at the summary (or the message it merged into)."""

    messages: list[Message]
    summary_index: int
    role: str
    merged: bool


def choose_role(prev: Message | None, nxt: Message | None, *, has_real_user: bool) -> SummaryRole | None:
    """A summary role colliding with neither neighbour, or None when both roles collide.

    After an assistant or tool message the summary reads best as `user`;
    otherwise as `assistant`. With no real user turn left it must be `user`.
    """
    preferred: tuple[SummaryRole, ...]
    if not has_real_user:
        preferred = ("user",)
    elif prev is not None and prev.role in ("assistant", "tool"):
        preferred = ("user", "assistant")
    else:
        preferred = ("assistant", "user")
    for role in preferred:
        if (prev is None or prev.role != role) and (nxt is None or nxt.role != role):
            return role
    return None


def _merge_into(message: Message, framed: str) -> Message:
    content = message.content
    if isinstance(content, tuple):
        lead = TextPart(text=f"{MERGED_PRIOR_HEADER}\n{framed}\n{MERGED_DELIMITER}\n\n")
        new: Message = message.with_content((lead, *content))
    else:
        new = message.with_content(merged_content(framed, content or ""))
    return replace(new, compressed_summary=True, summary_has_user_turn=message.role == "user")


def assemble(
    head: Sequence[Message],
    tail: Sequence[Message],
    body: str,
    *,
    has_real_user: bool,
    pinned: Sequence[Message] = (),
) -> Assembly:
    """Join the head, the pinned messages, the framed summary and the tail.

    The first system message gets the compaction note. The summary goes after
    the pinned messages (chronological order) when a role fits there, else
    before them when a role fits there, else it is merged into `tail[0]`
    (never into a pinned message: those stay verbatim).
    """
    before = list(head)
    if before and before[0].role == "system":
        before[0] = with_system_note(before[0])
    framed = frame_summary(body)
    after_pinned = [*before, *pinned]
    placements = [(after_pinned, list(tail))]
    if pinned:
        placements.append((before, [*pinned, *tail]))
    for left, right in placements:
        role = choose_role(left[-1] if left else None, right[0] if right else None, has_real_user=has_real_user)
        if role is not None or not right:
            chosen: SummaryRole = role or "user"
            summary = Message(role=chosen, content=framed, compressed_summary=True, summary_has_user_turn=chosen == "user")
            return Assembly([*left, summary, *right], len(left), chosen, merged=False)
    merged = _merge_into(tail[0], framed)
    return Assembly([*after_pinned, merged, *tail[1:]], len(after_pinned), tail[0].role, merged=True)
