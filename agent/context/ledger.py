"""The fact ledger: exact user facts that survive every compression, whatever the summary says.

Owns the `FactLedger` handoff section, its line format
(`- [turn 12, user] <verbatim clause>`), how the previous ledger is parsed
back out of the previous handoff, how turns are numbered across compressions
(`read_span`, shared with `agent.context.user_words`), and the merge rules:
newer statements on the same subject replace older ones, duplicates and
clauses contained in other clauses go, and the section stays within its token
budget by dropping the least important, then the oldest entries first.
Deterministic, no LLM. Knows nothing of how the summary body is produced.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.context._facts import Fact, Speaker, classify, extract_facts, normalise
from agent.messages import Message
from agent.tokens import TokenCounter

LEDGER_TITLE = "Fact ledger"
DEFAULT_LEDGER_MAX_TOKENS = 1500
# Markers of a compression handoff (SPEC §3.5); matched as substrings so a changed dash does not matter.
HANDOFF_PREFIX = "[CONTEXT COMPACTION"
HANDOFF_END = "END OF CONTEXT SUMMARY"
MERGED_HEADER = "[PRIOR CONTEXT"
MERGED_DELIMITER = "[END OF PRIOR CONTEXT"
# A weight for a stored line that no longer classifies (e.g. written by an older version): kept, dropped early.
UNCLASSIFIED_WEIGHT = 40
MAX_NAME_CHARS = 40

_ENTRY_LINE = re.compile(r"^- \[turn (\d+), (user|assistant)(?::([^\]\n]{1,40}))?\] (.+)$")
_TURNS_LINE = re.compile(r"^Verbatim [^\n]*? up to turn (\d+)\b", re.MULTILINE)
_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SpanMessage:
    """A user or assistant message of a compressed span, with its turn number."""

    turn: int
    speaker: Speaker
    name: str | None
    text: str


@dataclass(frozen=True, slots=True)
class Span:
    """What a compression drops, in chronological order around the previous handoff.

    Attributes:
        before: messages older than the previous handoff (a head that was protected before).
        previous: the previous handoff text, or None.
        shift: user turns found in `before`; entries parsed from `previous` move up by it.
        after: messages newer than the previous handoff.
        turns: the number of user turns covered once this compression is done.
    """

    before: tuple[SpanMessage, ...]
    previous: str | None
    shift: int
    after: tuple[SpanMessage, ...]
    turns: int


def turns_line(kind: str, turns: int, note: str) -> str:
    """The first line of a section: carries the turn count to the next compression."""
    return f"Verbatim {kind} up to turn {turns}; {note}"


def _is_handoff(message: Message) -> bool:
    if message.compressed_summary:
        return True
    if message.role not in ("user", "assistant"):
        return False
    text = message.text.lstrip()
    return text.startswith(HANDOFF_PREFIX) or (text.startswith(MERGED_HEADER) and HANDOFF_PREFIX in text[:400])


def _handoff_parts(text: str) -> tuple[str, str]:
    """(the handoff, the real message merged behind it): a summary may be merged into the first tail message."""
    if MERGED_DELIMITER in text:
        summary, rest = text.split(MERGED_DELIMITER, 1)
        return summary, rest.split("\n", 1)[1].strip() if "\n" in rest else ""
    return text, ""


def previous_turns(previous: str | None) -> int:
    """The turn count written by the previous handoff's sections (0 when there is none)."""
    if not previous:
        return 0
    return max((int(m.group(1)) for m in _TURNS_LINE.finditer(previous)), default=0)


def _number(messages: Sequence[Message], start: int) -> tuple[list[SpanMessage], int]:
    numbered: list[SpanMessage] = []
    turn = start
    for message in messages:
        if message.role not in ("user", "assistant"):
            continue
        if message.role == "user":
            turn += 1
        text = message.text.strip()
        if text:
            speaker: Speaker = "user" if message.role == "user" else "assistant"
            numbered.append(SpanMessage(turn, speaker, _clean_name(message.name), text))
    return numbered, turn


def _clean_name(name: str | None) -> str | None:
    if not name:
        return None
    cleaned = re.sub(r"[\]\[\n\r:]", "", name).strip()[:MAX_NAME_CHARS]
    return cleaned or None


def read_span(dropped: Sequence[Message], previous_summary: str | None) -> Span:
    """Number the user turns of `dropped`, continuing the count of the previous handoff.

    A turn begins at each real user message. Messages ahead of the previous
    handoff are the old protected head: they open the conversation, so they are
    numbered from 1 and everything the previous handoff numbered moves up by
    their user turns. On a first compression the protected head is not seen, so
    numbers start after it until the head itself is compressed.
    """
    index = next((i for i in range(len(dropped) - 1, -1, -1) if _is_handoff(dropped[i])), None)
    previous = previous_summary
    if index is None:
        head: Sequence[Message] = ()
        tail: list[Message] = list(dropped)
    else:
        handoff = dropped[index]
        summary, rest = _handoff_parts(handoff.text)
        previous = previous if previous is not None else summary
        head = dropped[:index]
        merged = [Message(role=handoff.role, content=rest, name=handoff.name)] if rest else []
        tail = merged + list(dropped[index + 1 :])
    before, shift = _number(head, 0)
    after, turns = _number(tail, previous_turns(previous) + shift)
    return Span(before=tuple(before), previous=previous, shift=shift, after=tuple(after), turns=turns)


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
    marker = body.find(HANDOFF_END)
    if marker >= 0:
        body = body[: body.rfind("\n", 0, marker) + 1]
    return body


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One ledger line: a verbatim fact and where it was said."""

    turn: int
    speaker: Speaker
    name: str | None
    fact: Fact
    order: int = 0  # chronological position in this merge; larger is newer

    @property
    def line(self) -> str:
        who = f"{self.speaker}:{self.name}" if self.name else self.speaker
        return f"- [turn {self.turn}, {who}] {self.fact.text}"


def parse_ledger(previous: str | None) -> tuple[LedgerEntry, ...]:
    """The entries of the ledger section of a previous handoff text, in order (robust to any text)."""
    body = section_body(previous, LEDGER_TITLE)
    if not body:
        return ()
    entries: list[LedgerEntry] = []
    for line in body.splitlines():
        match = _ENTRY_LINE.match(line.strip())
        if match is None:
            continue
        speaker: Speaker = "user" if match.group(2) == "user" else "assistant"
        text = match.group(4).strip()
        fact = classify(text, speaker) or Fact(text, (), (), (), UNCLASSIFIED_WEIGHT)
        entries.append(LedgerEntry(int(match.group(1)), speaker, match.group(3), fact))
    return tuple(entries)


@dataclass(frozen=True, slots=True)
class LedgerBuild:
    """What the ledger decided for one compression (rendered as the section, shown by `--explain`).

    Attributes:
        kept: the entries of the section, chronological.
        superseded: older entries replaced by a newer statement on the same subject.
        duplicates: entries dropped as repeats, as clauses inside kept clauses, or as values already kept.
        over_budget: entries dropped to stay within the token budget.
        turns: the user turns covered.
        text: the section text (None when there is nothing to keep).
        tokens: the tokens of `## {title}` plus the text.
    """

    kept: tuple[LedgerEntry, ...]
    superseded: tuple[LedgerEntry, ...] = ()
    duplicates: tuple[LedgerEntry, ...] = ()
    over_budget: tuple[LedgerEntry, ...] = ()
    turns: int = 0
    text: str | None = None
    tokens: int = 0


def collect_entries(span: Span) -> list[LedgerEntry]:
    """Every candidate entry of a span, chronological: old head, previous ledger (shifted), new messages."""
    raw: list[tuple[int, Speaker, str | None, Fact]] = []
    for message in span.before:
        raw.extend((message.turn, message.speaker, message.name, f) for f in extract_facts(message.text, message.speaker))
    for entry in parse_ledger(span.previous):
        raw.append((entry.turn + span.shift, entry.speaker, entry.name, entry.fact))
    for message in span.after:
        raw.extend((message.turn, message.speaker, message.name, f) for f in extract_facts(message.text, message.speaker))
    return [LedgerEntry(turn, speaker, name, fact, order) for order, (turn, speaker, name, fact) in enumerate(raw)]


def _supersede(entries: list[LedgerEntry]) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
    """Drop each entry all of whose subjects a newer entry restates."""
    latest: dict[str, int] = {}
    for entry in entries:
        for subject in entry.fact.subjects:
            latest[subject] = entry.order
    live: list[LedgerEntry] = []
    gone: list[LedgerEntry] = []
    for entry in entries:
        subjects = entry.fact.subjects
        if subjects and all(latest[s] > entry.order for s in subjects):
            gone.append(entry)
        else:
            live.append(entry)
    return live, gone


def _newest_copies(entries: list[LedgerEntry]) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
    """Keep the newest of identical facts (case and spacing aside)."""
    newest: dict[str, LedgerEntry] = {}
    for entry in entries:
        newest[normalise(entry.fact.text)] = entry
    kept_orders = {entry.order for entry in newest.values()}
    return [e for e in entries if e.order in kept_orders], [e for e in entries if e.order not in kept_orders]


@dataclass(slots=True)
class _Selection:
    """Greedy selection state: accepted entries in priority order and their cost."""

    budget: int
    counter: TokenCounter
    accepted: dict[int, LedgerEntry] = field(default_factory=dict)
    costs: dict[int, int] = field(default_factory=dict)
    keys: dict[int, str] = field(default_factory=dict)
    needles: set[str] = field(default_factory=set)
    used: int = 0

    def offer(self, entry: LedgerEntry) -> str:
        """'kept', 'duplicate' or 'over_budget'."""
        key = normalise(entry.fact.text)
        if any(key in other for other in self.keys.values()):
            return "duplicate"
        if not entry.fact.is_statement and entry.fact.needles and set(entry.fact.needles) <= self.needles:
            return "duplicate"
        contained = [order for order, other in self.keys.items() if other in key]
        cost = self.counter.count_text(entry.line + "\n")
        freed = sum(self.costs[order] for order in contained)
        if self.used - freed + cost > self.budget:
            return "over_budget"
        for order in contained:
            self.used -= self.costs.pop(order)
            del self.accepted[order], self.keys[order]
        self.accepted[entry.order] = entry
        self.costs[entry.order] = cost
        self.keys[entry.order] = key
        self.needles.update(entry.fact.needles)
        self.used += cost
        return "kept"


class FactLedger:
    """The `## Fact ledger` handoff section.

    Args:
        max_tokens: budget for the heading plus the section text (0 disables the section).
    """

    title = LEDGER_TITLE

    def __init__(self, *, max_tokens: int = DEFAULT_LEDGER_MAX_TOKENS) -> None:
        self.max_tokens = max_tokens

    def compute(self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter) -> LedgerBuild:
        """Decide the ledger for one compression (pure; `build` renders it)."""
        span = read_span(dropped, previous_summary)
        entries, repeats = _newest_copies(collect_entries(span))
        entries, superseded = _supersede(entries)
        first_line = turns_line("facts", span.turns, "a newer line overrides an older one.")
        budget = self.max_tokens - counter.count_text(f"## {self.title}\n{first_line}\n")
        selection = _Selection(budget=budget, counter=counter)
        over: dict[int, LedgerEntry] = {}
        for entry in sorted(entries, key=lambda e: (-e.fact.weight, -e.order)):
            if budget <= 0 or selection.offer(entry) == "over_budget":
                over[entry.order] = entry
        kept = sorted(selection.accepted.values(), key=lambda e: e.order)
        text: str | None = None
        tokens = 0
        while kept:
            text = "\n".join([first_line] + [e.line for e in kept])
            tokens = counter.count_text(f"## {self.title}\n{text}")
            if tokens <= self.max_tokens:
                break
            # Line counts do not add up exactly to the whole; drop the least important, oldest first.
            weakest = min(kept, key=lambda e: (e.fact.weight, e.order))
            kept.remove(weakest)
            over[weakest.order] = weakest
            text, tokens = None, 0
        kept_orders = {e.order for e in kept}
        duplicates = repeats + [e for e in entries if e.order not in kept_orders and e.order not in over]
        return LedgerBuild(
            kept=tuple(kept),
            superseded=tuple(superseded),
            duplicates=tuple(sorted(duplicates, key=lambda e: e.order)),
            over_budget=tuple(sorted(over.values(), key=lambda e: e.order)),
            turns=span.turns,
            text=text,
            tokens=tokens,
        )

    def build(self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter) -> str | None:
        """The section text for this compression, or None when nothing needs keeping."""
        if self.max_tokens <= 0:
            return None
        return self.compute(dropped, previous_summary, counter).text
