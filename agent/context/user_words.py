"""The "User words kept" handoff section: the real user messages of compressed turns, verbatim.

Owns the section's format (a `[turn N, user]` line, then the message with
every line quoted by `> `, so no user text can forge a heading), how the
previous section is parsed back out of the previous handoff, and the budget
rule: everything while it fits, beyond that the newest messages first.
Messages equal but for their numbers are kept once (the newest: the numbers
of a repeated boilerplate message are its least stable part). Deterministic,
no LLM.
Also owns `handoff_sections(settings)`: the configured pair, the ledger told
about this section so it does not repeat what is shown here.
Knows nothing of the summary body.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent.context._facts import extract_facts
from agent.context._span import (
    DEFAULT_PROTECT_FIRST_N,
    Carried,
    Span,
    SpanMessage,
    read_span,
    section_body,
    turns_line,
)
from agent.context._span import USER_WORDS_TITLE as USER_WORDS_TITLE
from agent.context.ledger import FactLedger, is_group, span_budget, states_value, unaddressed
from agent.context.sections import HandoffSection
from agent.messages import Message
from agent.settings import CompressionSettings
from agent.tokens import TokenCounter

DEFAULT_USER_WORDS_MAX_TOKENS = 1500
# Like the ledger (`LEDGER_SPAN_SHARE`): what the previous section held plus this share of what is newly removed.
USER_WORDS_SPAN_SHARE = 0.2
# Below the ledger's floor: on a small span the facts of omitted messages are in the ledger anyway.
USER_WORDS_FLOOR = 120
# Texts hold fewer tokens than chars / this (about 4 in prose): a cheap bound that skips exact counts.
MIN_CHARS_PER_TOKEN_BOUND = 10
QUOTE = "> "

_DIGITS = re.compile(r"\d+")
_WHITESPACE = re.compile(r"\s+")
_ENTRY_HEADER = re.compile(r"^\[turn (\d+), user(?::([^\]\n]{1,40}))?\]$")


def _repeat_key(text: str) -> str:
    """Messages equal but for their numbers and spacing ("found 2 actions" / "found 5 actions") repeat each other."""
    return _WHITESPACE.sub(" ", _DIGITS.sub("#", text)).strip()


def _states_a_value(text: str, names: frozenset[str]) -> bool:
    """A group line that is mostly a statement of a value (its fact clause is at least half of it);
    "jowi: 0 snd_hda_intel" addresses a speaker, it assigns nothing."""
    found = extract_facts(text, "user")
    if not found:
        return False  # most lines of a group: no generator to build
    facts = (unaddressed(f, names) for f in found)
    return any(states_value(f) and len(f.text) * 2 >= len(text) for f in facts)


def _newest_statements(messages: list[SpanMessage]) -> list[SpanMessage]:
    """Drop a line all of whose subjects a newer line restates ("Change merged: a" then "Change merged: b")."""
    subjects = [{s for f in extract_facts(m.text, "user") if states_value(f) for s in f.subjects} for m in messages]
    latest: dict[str, int] = {}
    for index, found in enumerate(subjects):
        for subject in found:
            latest[subject] = index
    return [m for i, m in enumerate(messages) if not subjects[i] or any(latest[s] == i for s in subjects[i])]


def handoff_sections(settings: CompressionSettings) -> tuple[HandoffSection, ...]:
    """The fact ledger and the user-words section as configured (`compression.fact_ledger` and budgets).

    The ledger is given the user-words section so that a fact shown there verbatim is not repeated.
    """
    if not settings.fact_ledger:
        return ()
    words = UserWords(max_tokens=settings.user_words_max_tokens, protect_first_n=settings.protect_first_n)
    ledger = FactLedger(
        max_tokens=settings.fact_ledger_max_tokens,
        protect_first_n=settings.protect_first_n,
        words=words if settings.user_words_max_tokens > 0 else None,
    )
    return (ledger, words) if settings.user_words_max_tokens > 0 else (ledger,)


def render_entry(message: SpanMessage) -> str:
    """`[turn N, user]` then each line of the message quoted."""
    who = f"user:{message.name}" if message.name else "user"
    quoted = "\n".join(QUOTE + line if line else QUOTE.rstrip() for line in message.text.split("\n"))
    return f"[turn {message.turn}, {who}]\n{quoted}"


def parse_user_words(previous: str | None) -> tuple[SpanMessage, ...]:
    """The messages of the user-words section of a previous handoff text, in order."""
    body = section_body(previous, USER_WORDS_TITLE)
    if not body:
        return ()
    messages: list[SpanMessage] = []
    header: re.Match[str] | None = None
    lines: list[str] = []

    def flush() -> None:
        if header is not None and lines:
            messages.append(SpanMessage(int(header.group(1)), "user", header.group(2), "\n".join(lines)))

    for line in body.split("\n"):
        match = _ENTRY_HEADER.match(line.strip())
        if match is not None:
            flush()
            header, lines = match, []
        elif header is not None and line.startswith(QUOTE.rstrip()):
            lines.append(line[len(QUOTE) :] if line.startswith(QUOTE) else "")
    flush()
    return tuple(messages)


@dataclass(frozen=True, slots=True)
class UserWordsBuild:
    """What the section decided for one compression.

    Attributes:
        kept: the messages shown, chronological.
        omitted: messages left out for the budget (oldest and largest first).
        repeats: older copies of a kept or omitted message (equal but for numbers and spacing).
        turns: the user turns covered.
        text: the section text (None when there is nothing to show).
        tokens: the tokens of `## {title}` plus the text.
    """

    kept: tuple[SpanMessage, ...]
    omitted: tuple[SpanMessage, ...] = ()
    repeats: int = 0
    turns: int = 0
    text: str | None = None
    tokens: int = 0


class UserWords:
    """The `## User words kept` handoff section.

    Args:
        max_tokens: budget for the heading plus the section text (0 disables the section).
        protect_first_n: the compressor's `protect_first_n` (see `FactLedger`).
    """

    title = USER_WORDS_TITLE

    def __init__(
        self, *, max_tokens: int = DEFAULT_USER_WORDS_MAX_TOKENS, protect_first_n: int = DEFAULT_PROTECT_FIRST_N
    ) -> None:
        self.max_tokens = max_tokens
        self.protect_first_n = protect_first_n
        self._last: tuple[tuple[tuple[Message, ...], str | None, str], UserWordsBuild] | None = None

    def compute(
        self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter
    ) -> UserWordsBuild:
        """Decide which user messages are shown (pure; `build` renders it).

        The last result is remembered: the ledger asks for it during the same compression.
        """
        key = (tuple(dropped), previous_summary, counter.name)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        build = self._compute(dropped, previous_summary, counter)
        self._last = (key, build)
        return build

    def _compute(
        self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter
    ) -> UserWordsBuild:
        span = read_span(dropped, previous_summary, protect_first_n=self.protect_first_n)
        candidates: list[SpanMessage] = []
        for item in span.items:
            if isinstance(item, Carried):
                candidates.extend(replace(m, turn=m.turn + item.offset) for m in parse_user_words(item.text))
            elif item.speaker == "user":
                candidates.append(item)
        if is_group(span):
            # A group's chit-chat is no user word worth keeping, nor a line that mentions a path or a number in
            # passing, nor its "don't"s and "should"s: only lines that are mostly a statement of a value. The
            # ledger keeps the clause of the rest (a long paste with one "x: 1" in it costs the whole paste here).
            names = frozenset(name.casefold() for name in {m.name for m in candidates if m.name})  # each name once
            candidates = _newest_statements([m for m in candidates if _states_a_value(m.text, names)])
        newest: dict[str, int] = {_repeat_key(m.text): index for index, m in enumerate(candidates)}
        unique = [m for index, m in enumerate(candidates) if newest[_repeat_key(m.text)] == index]
        repeats = len(candidates) - len(unique)
        limit = span_budget(span, self.title, self.max_tokens, USER_WORDS_SPAN_SHARE, counter, USER_WORDS_FLOOR)
        if not unique or self.max_tokens <= 0:
            return UserWordsBuild(kept=(), omitted=tuple(unique), repeats=repeats, turns=span.turns)
        kept, omitted = self._fit(unique, span, counter, limit)
        while kept:
            text = self._render(kept, len(omitted), span)
            tokens = counter.count_text(f"## {self.title}\n{text}")
            if tokens <= limit:
                return UserWordsBuild(tuple(kept), tuple(omitted), repeats, span.turns, text, tokens)
            # Per-entry counts do not add up exactly to the whole; give up the oldest until it fits.
            omitted = sorted([kept.pop(0), *omitted], key=lambda m: m.turn)
        return UserWordsBuild(kept=(), omitted=tuple(unique), repeats=repeats, turns=span.turns)

    def _fit(
        self, messages: list[SpanMessage], span: Span, counter: TokenCounter, limit: int
    ) -> tuple[list[SpanMessage], list[SpanMessage]]:
        """Newest first: a message that does not fit is left out, older smaller ones may still fit."""
        # The omitted-count in the first line can only grow by a digit or two; reserve for it.
        overhead = counter.count_text(f"## {self.title}\n{self._first_line(len(messages), span)}\n") + 2
        used = overhead
        kept: list[SpanMessage] = []
        omitted: list[SpanMessage] = []
        for message in reversed(messages):
            rendered = render_entry(message)
            if len(rendered) // MIN_CHARS_PER_TOKEN_BOUND > limit - used:
                omitted.append(message)  # cannot fit whatever its exact count: no tokenisation needed
                continue
            cost = counter.count_text(rendered + "\n")
            if used + cost <= limit:
                kept.append(message)
                used += cost
            else:
                omitted.append(message)
        return kept[::-1], omitted[::-1]

    @staticmethod
    def _first_line(omitted: int, span: Span) -> str:
        note = f"{omitted} left out for space." if omitted else "none left out."
        return turns_line("user messages", span, note)

    def _render(self, kept: Sequence[SpanMessage], omitted: int, span: Span) -> str:
        return "\n".join([self._first_line(omitted, span), *(render_entry(m) for m in kept)])

    def build(self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter) -> str | None:
        """The section text for this compression, or None when there is no user message to keep."""
        if self.max_tokens <= 0:
            return None
        return self.compute(dropped, previous_summary, counter).text

    def shown(
        self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter
    ) -> tuple[SpanMessage, ...]:
        """The messages this section shows for a compression (for `FactLedger(words=...)`)."""
        if self.max_tokens <= 0:
            return ()
        return self.compute(dropped, previous_summary, counter).kept

    def previously_shown(self, previous_summary: str | None) -> tuple[SpanMessage, ...]:
        """The messages this section showed in a previous handoff text."""
        return parse_user_words(previous_summary)
