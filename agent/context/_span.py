"""Turn numbering across compressions: the span a handoff section covers, and the speaker of each line.

Owns `read_span` (the dropped messages as numbered user/assistant lines, with each previous handoff in the span
as a `Carried` block whose sections are parsed back), `turns_line` / `previous_turns` (the first line of a
section that carries the turn count), `section_body`, and who spoke a group line (`[nick] text` or the
gateway's `nick: text`). Shared by the fact ledger and the user-words section. Deterministic, no LLM.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeAlias

from agent.context._boundaries import head_size
from agent.context._facts import Speaker
from agent.context._handoff import END_MARKER, MERGED_PRIOR_HEADER, handoff_text, is_handoff, unmerge
from agent.messages import Message
from agent.tokens import estimate_tokens

LEDGER_TITLE = "Fact ledger"
USER_WORDS_TITLE = "User words kept"
# Sections whose first line carries the turn count (see `turns_line`).
SECTION_TITLES = (LEDGER_TITLE, USER_WORDS_TITLE)
# The compressor protects this many opening messages on the first compression (CompressionSettings default).
DEFAULT_PROTECT_FIRST_N = 3
OPENING_NOTE = " after the opening turns"
MAX_NAME_CHARS = 40
# Group lines name their speaker: `[nick] text` (IRC logs, bridges) or `nick: text` (the gateway's shared
# sessions, see `gateway.sessions.lines`, where chatter the bot only observed opens with "(not addressed to you) ").
# The second is only read as a name when most lines of the span have it: in a one-person chat "timeout: 30s" is a
# fact, not a speaker.
_BRACKET_NAME = re.compile(r"^\[([^\]\n]{1,40})\] ?")
_COLON_NAME = re.compile(r"^(?:\(not addressed to you\) )?([^\s:\[\]][^:\n]{0,39}?): (?=\S)")
SHARED_SHARE = 0.8
_TURNS_LINE = re.compile(rf"Verbatim [^\n]*? up to turn (\d+)({OPENING_NOTE})?;")
_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SpanMessage:
    """A user or assistant message of a compressed span, with its turn number."""

    turn: int
    speaker: Speaker
    name: str | None
    text: str


@dataclass(frozen=True, slots=True)
class Carried:
    """A previous handoff inside the span: what its sections kept, renumbered by `offset` turns."""

    text: str
    offset: int


SpanItem: TypeAlias = SpanMessage | Carried


@dataclass(frozen=True, slots=True)
class Span:
    """What a compression drops, in chronological order.

    Attributes:
        items: user/assistant messages and previous handoffs, oldest first.
        turns: the number of user turns covered once this compression is done.
        opening_included: whether the protected opening messages have been numbered yet.
        removed_estimate: the estimated tokens of the messages removed (previous handoffs aside), which
            bounds what a section may cost (see `agent.context.ledger.span_budget`).
    """

    items: tuple[SpanItem, ...]
    turns: int
    opening_included: bool = True
    removed_estimate: int = 0


def turns_line(kind: str, span: Span, note: str) -> str:
    """The first line of a section: carries the turn count (and whether the opening is counted) forward."""
    opening = "" if span.opening_included else OPENING_NOTE
    return f"Verbatim {kind} up to turn {span.turns}{opening}; {note}"


def previous_turns(previous: str | None) -> tuple[int, bool] | None:
    """(turn count, opening included) from the first line of our sections in a handoff text, None without them."""
    found: list[tuple[int, bool]] = []
    for title in SECTION_TITLES:
        body = section_body(previous, title)
        match = _TURNS_LINE.match(body.lstrip("\n")) if body else None
        if match is not None:
            found.append((int(match.group(1)), not match.group(2)))
    return max(found) if found else None


_NAMED_ENTRY = re.compile(r"\[turn \d+, user:")


def _shared(messages: Sequence[Message], handoff: Sequence[bool], previous_summary: str | None) -> bool:
    """Most user lines start with `name: ` (from several names, or after a handoff that named speakers)."""
    users = [m.text for m, summary in zip(messages, handoff, strict=True) if m.role == "user" and not summary]
    named = _colon_names(users)
    if not users or named is None or len(named) < SHARED_SHARE * len(users):
        return False
    if len(set(named)) >= 3 or (len(set(named)) == 2 and len(users) >= 4):
        return True
    handoffs = [handoff_text(m) for m, summary in zip(messages, handoff, strict=True) if summary] or [previous_summary or ""]
    return any(_NAMED_ENTRY.search(text) for text in handoffs)


def _colon_names(users: Sequence[str]) -> list[str] | None:
    """The `name: ` names the lines open with, or None as soon as too few of them can (`SHARED_SHARE`): the lines
    of a chat whose speakers are bracketed (`[nick] text`) are not all read."""
    named: list[str] = []
    misses = 0
    allowed = len(users) - SHARED_SHARE * len(users)  # more lines without a name than this: not shared
    for text in users:
        match = _COLON_NAME.match(text)
        if match is None:
            misses += 1
            if misses > allowed:
                return None
        else:
            named.append(match.group(1))
    return named


_NAME_NOISE = re.compile(r"[\]\[\n\r:]")
NAME_CACHE_SIZE = 1024


@lru_cache(maxsize=NAME_CACHE_SIZE)  # a chat's few speakers say most of its lines
def _clean_name(name: str | None) -> str | None:
    if not name:
        return None
    cleaned = _NAME_NOISE.sub("", name).strip()[:MAX_NAME_CHARS]
    return cleaned or None


def _speaker(message: Message, text: str, shared: bool) -> tuple[str | None, str]:
    """(name, text without the name prefix) of a user line."""
    match = _BRACKET_NAME.match(text)
    if match is None and shared:
        match = _COLON_NAME.match(text)
    if match is not None:
        rest = text[match.end():].strip()
        if rest:
            return _clean_name(match.group(1)) or _clean_name(message.name), rest
    return _clean_name(message.name), text


def _number(messages: Sequence[Message], start: int, shared: bool = False) -> tuple[list[SpanMessage], int]:
    numbered: list[SpanMessage] = []
    append = numbered.append
    turn = start
    for message in messages:
        role = message.role
        if role == "user":
            turn += 1
            text = message.text.strip()
            if text:
                name, body = _speaker(message, text, shared)
                append(SpanMessage(turn, "user", name, body))
        elif role == "assistant":
            text = message.text.strip()
            if text:
                append(SpanMessage(turn, "assistant", _clean_name(message.name), text))
    return numbered, turn


# The last span read: the ledger and the user-words section both read the same span in one compression, so the
# second asks for it by the same (frozen) message objects. Compared by identity, which costs no hashing of content.
_last_span: tuple[tuple[Message, ...], str | None, int, Span] | None = None


def forget_span() -> None:
    """Drop the remembered span (benches measure a cold read)."""
    global _last_span
    _last_span = None


def read_span(
    dropped: Sequence[Message], previous_summary: str | None, *, protect_first_n: int = DEFAULT_PROTECT_FIRST_N
) -> Span:
    """`read_numbered`, remembered for the next call with the same messages (one compression builds it once)."""
    global _last_span
    last = _last_span
    if (
        last is not None
        and last[2] == protect_first_n
        and len(last[0]) == len(dropped)
        and last[1] == previous_summary
        and all(a is b for a, b in zip(last[0], dropped, strict=True))
    ):
        return last[3]
    span = read_numbered(dropped, previous_summary, protect_first_n=protect_first_n)
    _last_span = (tuple(dropped), previous_summary, protect_first_n, span)
    return span


def read_numbered(
    dropped: Sequence[Message], previous_summary: str | None, *, protect_first_n: int = DEFAULT_PROTECT_FIRST_N
) -> Span:
    """Put `dropped` in chronological order and number its user turns across compressions.

    A turn begins at each real user message; a previous handoff counts the
    turns its sections say it covered. Messages ahead of a handoff are older
    than it when they are the conversation's protected opening (the first
    `protect_first_n`, while the handoff says the opening is not counted yet)
    and newer otherwise: the compressor pins the latest user message ahead of
    the summary it writes. The first compression does not see the protected
    opening, so its numbers start after it and its sections say so.
    `previous_summary` is only read when no handoff is among `dropped`.
    """
    items: list[SpanItem] = []
    flags = [is_handoff(message) for message in dropped]
    shared = _shared(dropped, flags, previous_summary)
    handoffs = [index for index, summary in enumerate(flags) if summary]
    removed = _removed_estimate(dropped, flags)
    if not handoffs:
        state = previous_turns(previous_summary)
        turn = 0
        if previous_summary is not None and state is not None:
            items.append(Carried(previous_summary, 0))
            turn = state[0]
        numbered, turn = _number(dropped, turn, shared)
        opening = state[1] if state is not None else protect_first_n == 0
        return Span((*items, *numbered), turn, opening, removed)
    turn = 0
    start = 0
    for index in handoffs:
        run, handoff = dropped[start:index], dropped[index]
        text = handoff_text(handoff)
        state = previous_turns(text)
        cut = len(run) if state is None else 0 if state[1] else head_size(run, protect_first_n)
        numbered, turn = _number(run[:cut], turn, shared)
        items.extend(numbered)
        items.append(Carried(text, turn))
        turn += state[0] if state is not None else 0
        rest = unmerge(handoff.text) if handoff.text.startswith(MERGED_PRIOR_HEADER) else ""
        merged = [Message(role=handoff.role, content=rest, name=handoff.name)] if rest.strip() else []
        numbered, turn = _number([*run[cut:], *merged], turn, shared)
        items.extend(numbered)
        start = index + 1
    numbered, turn = _number(dropped[start:], turn, shared)
    return Span((*items, *numbered), turn, True, removed)


def _removed_estimate(dropped: Sequence[Message], handoff: Sequence[bool]) -> int:
    """Estimated tokens of the removed messages that are no handoff (text and tool-call arguments)."""
    return sum(
        estimate_tokens(m.text) + (sum(len(c.arguments) for c in m.tool_calls) // 4 if m.tool_calls else 0)
        for m, summary in zip(dropped, handoff, strict=True)
        if not summary
    )


def section_body(previous: str | None, title: str) -> str | None:
    """The text under the last `## {title}` heading of a handoff (the compressor appends sections last)."""
    if not previous:
        return None
    headings = [m for m in _HEADING.finditer(previous) if m.group(1).strip() == title]
    if not headings:
        return None
    start = headings[-1].end()
    following = _HEADING.search(previous, start)
    end = following.start() if following else len(previous)
    body = previous[start:end]
    marker = body.find(END_MARKER)
    if marker >= 0:
        body = body[:marker]
    return body
