"""The fact ledger: exact user facts that survive every compression, whatever the summary says.

Owns the `FactLedger` handoff section, its line format
(`- [turn 12, user] <verbatim clause>`, first line `Verbatim facts up to turn
N; ...` carrying the turn count), how the ledger of every previous handoff in
the span is parsed back (one may linger in the tail while a newer one is
written ahead of it), how turns are numbered across compressions (`read_span`,
in `agent.context._span`, shared with `agent.context.user_words`), and the merge rules: newer
statements on the same subject replace older ones, repeats, clauses contained
in other clauses and values already kept go, facts the user-words section
shows verbatim are left to it, and the section stays within its token budget
by dropping the least important, then the oldest entries first.
Deterministic, no LLM. Knows nothing of how the summary body is produced.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from agent.context._facts import USER_WEIGHTS, Fact, Speaker, answer_fact, classify, extract_facts, normalise
from agent.context._span import DEFAULT_PROTECT_FIRST_N as DEFAULT_PROTECT_FIRST_N
from agent.context._span import LEDGER_TITLE as LEDGER_TITLE
from agent.context._span import USER_WORDS_TITLE as USER_WORDS_TITLE
from agent.context._span import Carried as Carried
from agent.context._span import Span as Span
from agent.context._span import SpanMessage as SpanMessage
from agent.context._span import read_span as read_span
from agent.context._span import section_body as section_body
from agent.context._span import turns_line as turns_line
from agent.context._statements import asks_value, is_question, may_answer, opens_with_rule
from agent.context.sections import SectionDrops
from agent.messages import Message
from agent.tokens import TokenCounter

DEFAULT_LEDGER_MAX_TOKENS = 1500
# A weight for a stored line that no longer classifies (e.g. written by an older version): kept, dropped early.
UNCLASSIFIED_WEIGHT = 40

_ENTRY_LINE = re.compile(r"^- \[turn (\d+), (user|assistant)(?::([^\]\n]{1,40}))?\] (.+)$")
_ANSWER_SUFFIX = re.compile(r"^(?P<text>.+?) \(answer to (?P<context>[^\n]+)\)$")
# How far back a bare answer looks for the question it answers.
ANSWER_LOOKBACK = 5


class VerbatimUserWords(Protocol):
    """A section that shows whole user messages verbatim (`UserWords`): the facts it shows need no ledger line."""

    def shown(
        self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter
    ) -> tuple[SpanMessage, ...]:
        """The user messages it shows for this compression, numbered like the ledger."""
        ...

    def previously_shown(self, previous_summary: str | None) -> tuple[SpanMessage, ...]:
        """The user messages it showed in a previous handoff text, with the turns written there."""
        ...


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
        context = f" (answer to {self.fact.context})" if self.fact.context else ""
        return f"- [turn {self.turn}, {who}] {self.fact.text}{context}"


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
        answer = _ANSWER_SUFFIX.match(text)
        fact: Fact | None = None
        if answer is not None:
            asker, _, question = answer.group("context").partition(": ")
            fact = answer_fact(answer.group("text"), question, asker)
        fact = fact or classify(text, speaker) or (answer_fact(text, "", "") if speaker == "user" else None)
        fact = fact or Fact(text, (), (), (), UNCLASSIFIED_WEIGHT)
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
        in_user_words: user facts left out because the user-words section shows their message verbatim.
        turns: the user turns covered.
        text: the section text (None when there is nothing to keep).
        tokens: the tokens of `## {title}` plus the text.
    """

    kept: tuple[LedgerEntry, ...]
    superseded: tuple[LedgerEntry, ...] = ()
    duplicates: tuple[LedgerEntry, ...] = ()
    over_budget: tuple[LedgerEntry, ...] = ()
    in_user_words: tuple[LedgerEntry, ...] = ()
    turns: int = 0
    text: str | None = None
    tokens: int = 0


def _message_facts(item: SpanMessage, before: Sequence[SpanMessage]) -> tuple[Fact, ...]:
    """The facts of one span message; a bare value right after someone's question is that question's answer."""
    facts = extract_facts(item.text, item.speaker)
    if item.speaker != "user" or not may_answer(item.text):
        return facts  # only a short user line can be a bare answer (see `answer_fact`)
    if not any(_is_exact_statement(f) or f.is_statement for f in facts):
        window = before[-ANSWER_LOOKBACK:]
        for index in range(len(window) - 1, -1, -1):
            earlier = window[index]
            if (earlier.name != item.name or earlier.speaker != item.speaker) and is_question(earlier.text):
                if not asks_value(earlier.text):
                    continue  # "what do you think?" in between: the value question may be just before
                if any(_answers(m, earlier) for m in window[index + 1:]):
                    break  # answered already ("96562", then "What about PING")
                answer = answer_fact(item.text, earlier.text, earlier.name or earlier.speaker)
                if answer is not None:
                    return (answer,)
                break
    if not facts and not before:
        # The first line of a span may answer a question the previous compression removed.
        answer = answer_fact(item.text, "", "")
        return (answer,) if answer is not None else ()
    return facts


def _answers(reply: SpanMessage, question: SpanMessage) -> bool:
    """Whether `reply` is a bare-value answer to `question` by someone else."""
    if reply.speaker != "user" or reply.name == question.name or is_question(reply.text):
        return False
    return answer_fact(reply.text, question.text, "") is not None


def unaddressed(fact: Fact, names: frozenset[str]) -> Fact:
    """ "karllekko: req_123" addresses someone, it assigns nothing: the speaker's name is no key."""
    if "assignment" not in fact.kinds or not any(s[2:] in names for s in fact.subjects if s.startswith("k:")):
        return fact
    kinds = tuple(kind for kind in fact.kinds if kind != "assignment")
    subjects = tuple(s for s in fact.subjects if not (s.startswith("k:") and s[2:] in names))
    return replace(fact, kinds=kinds, subjects=subjects, weight=USER_WEIGHTS[kinds[0]] if kinds else UNCLASSIFIED_WEIGHT)


def _only_names(fact: Fact, names: frozenset[str]) -> bool:
    """A clause whose only "values" are speakers' nicknames ("DG19075: why?") states nothing."""
    if not names or not fact.needles or fact.is_statement or "assignment" in fact.kinds:
        return False
    return all(needle.casefold().rstrip(":,") in names for needle in fact.needles)


def is_group(span: Span) -> bool:
    """A span whose user lines come from several named speakers (a group chat), carried handoffs included."""
    names = {item.name for item in span.items if isinstance(item, SpanMessage) and item.speaker == "user" and item.name}
    if len(names) >= 2:
        return True
    return any(isinstance(item, Carried) and _NAMED_LINE.search(item.text) for item in span.items) and bool(names)


_NAMED_LINE = re.compile(r"\[turn \d+, user:")


def collect_entries(span: Span, words: VerbatimUserWords | None = None) -> list[LedgerEntry]:
    """Every candidate entry, chronological; a previous handoff contributes its ledger lines and the
    facts of the user messages it showed verbatim, by turn."""
    raw: list[tuple[int, Speaker, str | None, Fact]] = []
    # A chat's few speakers say all of its lines: each name is casefolded once.
    names = frozenset(name.casefold() for name in {item.name for item in span.items if isinstance(item, SpanMessage) and item.name})
    before: list[SpanMessage] = []
    for item in span.items:
        if isinstance(item, SpanMessage):
            found = _message_facts(item, before)
            if found:  # most lines of a chat hold none: no list to build
                facts = [unaddressed(f, names) for f in found]
                raw.extend((item.turn, item.speaker, item.name, f) for f in facts if not _only_names(f, names))
            before.append(item)
            continue
        carried = [(e.turn + item.offset, e.speaker, e.name, e.fact) for e in parse_ledger(item.text)]
        for message in words.previously_shown(item.text) if words is not None else ():
            shown = extract_facts(message.text, "user") or tuple(filter(None, [answer_fact(message.text, "", "")]))
            carried.extend((message.turn + item.offset, "user", message.name, f) for f in shown)
        raw.extend(sorted(carried, key=lambda entry: entry[0]))
    return [LedgerEntry(turn, speaker, name, fact, order) for order, (turn, speaker, name, fact) in enumerate(raw)]


def _shown_elsewhere(
    entries: list[LedgerEntry], shown: Sequence[SpanMessage]
) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
    """Split off user facts whose message another section shows verbatim (same turn, clause inside it)."""
    by_turn: dict[int, list[str]] = {}
    for message in shown:
        by_turn.setdefault(message.turn, []).append(message.text)
    live: list[LedgerEntry] = []
    covered: list[LedgerEntry] = []
    for entry in entries:
        # An answer stays here: its question is what makes it mean something.
        texts = by_turn.get(entry.turn, ()) if entry.speaker == "user" and not entry.fact.context else ()
        (covered if any(entry.fact.text in text for text in texts) else live).append(entry)
    return live, covered


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


def _newest_copies(
    entries: list[LedgerEntry], keys: dict[int, str]
) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
    """Keep the newest of identical facts (case and spacing aside). Fills `keys`: each entry's `normalise`d text
    by its order (the selection compares the same keys)."""
    newest: dict[str, LedgerEntry] = {}
    for entry in entries:
        key = keys[entry.order] = normalise(entry.fact.text)
        if key not in newest or entry.fact.context or not newest[key].fact.context:
            newest[key] = entry  # an answer keeps the copy that says what it answers
    kept_orders = {entry.order for entry in newest.values()}
    return [e for e in entries if e.order in kept_orders], [e for e in entries if e.order not in kept_orders]


# A clause that only mentions these adds nothing once each of them is kept verbatim in another line;
# a number, date or name means something different in each sentence, so those clauses always count.
REFERENCE_KINDS = frozenset({"path", "url", "identifier", "ticket", "email"})


def _only_references(fact: Fact) -> bool:
    return bool(fact.needles) and bool(fact.kinds) and set(fact.kinds) <= REFERENCE_KINDS


@dataclass(slots=True)
class _Selection:
    """Greedy selection state: accepted entries in priority order and their cost."""

    budget: int
    counter: TokenCounter
    minor_budget: int = 1 << 30
    accepted: dict[int, LedgerEntry] = field(default_factory=dict)
    costs: dict[int, int] = field(default_factory=dict)
    keys: dict[int, str] = field(default_factory=dict)
    needles: set[str] = field(default_factory=set)
    minor: set[int] = field(default_factory=set)
    used: int = 0
    minor_used: int = 0
    normalised: dict[int, str] = field(default_factory=dict)  # entries' keys read before (`_newest_copies`)
    joined: str | None = None  # the accepted keys joined by NUL, once asked for; None when they changed

    def _inside_accepted(self, key: str) -> bool:
        """Whether `key` is inside an accepted key: one search of them joined (a key holding no NUL cannot
        span two of them) instead of one per key."""
        if not self.keys or "\0" in key:
            return any(key in other for other in self.keys.values())
        if self.joined is None:
            self.joined = "\0".join(self.keys.values())
        return key in self.joined

    def verdict(self, entry: LedgerEntry) -> str:
        """What `offer` answers for `entry` as the selection stands, without keeping it; 'unknown' where that
        takes its tokens (counted by `offer` alone, which may turn it down before counting)."""
        return self._judge(entry, count=False)[0]

    def _judge(self, entry: LedgerEntry, *, count: bool = True) -> tuple[str, str, list[int], int, bool]:
        """(verdict, key, the accepted entries inside it, its cost, minor) of `entry`; changes no state but the
        caches (the joined keys). Without `count`, 'unknown' instead of counting its tokens."""
        key = self.normalised.get(entry.order)
        if key is None:
            key = normalise(entry.fact.text)
        if self._inside_accepted(key):
            return "duplicate", key, [], 0, False
        if _only_references(entry.fact) and set(entry.fact.needles) <= self.needles:
            return "duplicate", key, [], 0, False
        contained = [order for order, other in self.keys.items() if other in key]
        minor = not _is_exact_statement(entry.fact) and not _worded_as_rule(entry.fact)
        if not contained:
            # Cannot fit whatever its exact count (tokens >= chars / the bound): no tokenisation needed.
            least = len(entry.line) // MIN_CHARS_PER_TOKEN_BOUND
            if self.used + least > self.budget or (minor and self.minor_used + least > self.minor_budget):
                return "over_budget", key, contained, 0, minor
        if not count:
            return "unknown", key, contained, 0, minor
        cost = self.counter.count_text(entry.line + "\n")
        freed = sum(self.costs[order] for order in contained)
        if self.used - freed + cost > self.budget:
            return "over_budget", key, contained, cost, minor
        if minor and self.minor_used - sum(self.costs[o] for o in contained if o in self.minor) + cost > self.minor_budget:
            return "over_budget", key, contained, cost, minor
        return "kept", key, contained, cost, minor

    def offer(self, entry: LedgerEntry) -> str:
        """'kept', 'duplicate' or 'over_budget'."""
        verdict, key, contained, cost, minor = self._judge(entry)
        if verdict != "kept":
            return verdict
        for order in contained:
            cost_freed = self.costs.pop(order)
            self.used -= cost_freed
            if order in self.minor:
                self.minor.discard(order)
                self.minor_used -= cost_freed
            del self.accepted[order], self.keys[order]
        self.joined = None
        if minor:
            self.minor.add(entry.order)
            self.minor_used += cost
        self.accepted[entry.order] = entry
        self.costs[entry.order] = cost
        self.keys[entry.order] = key
        self.needles.update(entry.fact.needles)
        self.used += cost
        return "kept"


# Statements of an exact value, answers, names, user decisions and rules worded as rules ("Never deploy on
# Fridays") may use the whole budget; every other line (mentions of values, ids and paths, advice such as
# "you should...") may use this part of it. One person's session keeps them all (its few user messages are
# the task: the ids in it matter); a group chat with several speakers pastes paths, numbers and "should"s
# all day (bench/retention.py --group: most such lines of real IRC logs are chatter).
MINOR_SHARE = 1.0
GROUP_MINOR_SHARE = 0.05
# Texts hold fewer tokens than chars / this (about 4 in prose): a cheap bound that skips exact counts.
MIN_CHARS_PER_TOKEN_BOUND = 10
EXACT_KINDS = frozenset({"assignment", "answer", "name"})


def _is_exact_statement(fact: Fact) -> bool:
    return bool(EXACT_KINDS.intersection(fact.kinds))


def _worded_as_rule(fact: Fact) -> bool:
    """A user decision, or a user constraint that opens with its rule word ("Never deploy on Fridays")."""
    if fact.weight == USER_WEIGHTS["decision"] and "decision" in fact.kinds:
        return True
    return fact.weight == USER_WEIGHTS["constraint"] and "constraint" in fact.kinds and opens_with_rule(fact.text)


def states_value(fact: Fact) -> bool:
    """A fact that states an exact value, an answer or a name (not a rule, a decision or a passing mention)."""
    return _is_exact_statement(fact)


# The section never takes more than this share of what the compression removes (carried handoffs included):
# a compression with a ledger must still shrink the prompt, however small the span the hard limit cuts.
LEDGER_SPAN_SHARE = 0.6
MIN_SPAN_BUDGET = 300
DROP_POLICY = (
    "a line goes when a newer line on the same subject supersedes it, or when it repeats a kept one; "
    "when the budget binds, the lowest rank goes first (assistant decisions, then mentions of ids, paths, "
    "links and values, then constraints and decisions, plain statements of a value and answers last), "
    "within a rank an unreferenced line (nothing said later repeats its value) before a referenced one, "
    "oldest first; in a group chat mentions and advice not worded as a rule (\"you should...\") may take "
    "only a twentieth of the budget"
)


def span_budget(
    span: Span, title: str, max_tokens: int, share: float, counter: TokenCounter, floor: int = MIN_SPAN_BUDGET
) -> int:
    """`max_tokens`, or less when little is removed: what the previous handoffs' section held plus `share`
    of the newly removed messages (never below a floor), so a compression with this section still shrinks."""
    fresh = span.removed_estimate
    carried = sum(counter.count_text(section_body(i.text, title) or "") for i in span.items if isinstance(i, Carried))
    return min(max_tokens, max(floor, carried + int(fresh * share)))


class _Ranking:
    """The keep-priority of an entry (`DROP_POLICY`): weight, then referenced later, then newer.

    Whether a value is referenced again is only looked up when the budget may bind (it scans the span), and then
    only for the entries whose rank is asked for (see `_select`): each lookup is a scan of the rest of the span.
    """

    def __init__(self, entries: Sequence[LedgerEntry], span: Span, budget: int) -> None:
        self.binds = sum(len(e.line) for e in entries) // 4 > budget
        self.span = span
        self._said: tuple[list[int], list[int], str] | None = None
        self._referenced: dict[int, bool] = {}

    def key(self, entry: LedgerEntry) -> tuple[int, bool, int]:
        return (entry.fact.weight, self.binds and self._is_referenced(entry), entry.order)

    def _read(self) -> tuple[list[int], list[int], str]:
        """The span's messages as (turns, start offsets, their casefolded texts joined by newlines), read once."""
        if self._said is None:
            said = [(m.turn, m.text.casefold()) for m in self.span.items if isinstance(m, SpanMessage)]
            starts: list[int] = []
            offset = 0
            for _, text in said:
                starts.append(offset)
                offset += len(text) + 1
            self._said = [turn for turn, _ in said], starts, "\n".join(text for _, text in said)
        return self._said

    def _is_referenced(self, entry: LedgerEntry) -> bool:
        """Whether a message after the entry's turn holds one of its values (case-blind)."""
        found = self._referenced.get(entry.order)
        if found is None:
            turns, starts, joined = self._read()
            index = bisect.bisect_right(turns, entry.turn)
            found = index < len(turns) and any(joined.find(n.casefold(), starts[index]) >= 0 for n in entry.fact.needles)
            self._referenced[entry.order] = found
        return found


def _select(
    entries: Sequence[LedgerEntry], rank: _Ranking, selection: _Selection, budget: int
) -> dict[int, LedgerEntry]:
    """Offer every entry to `selection`, highest rank first; the entries it turns down for the budget, by order.

    The same as offering them in rank order, without ranking most of them: within one weight the rank only orders
    the entries (by reference, then age), and an entry turned down leaves the selection as it was. So when the
    selection as it stands turns down every entry of a weight, it turns each down whatever their order, and no
    reference of theirs is looked up: in a group chat most mentions (most entries) are over the minor budget.
    Only the verdicts that need no token count are asked ahead (a count is the offer's, in rank order: an entry
    the offer turns down by its length alone is never counted).
    """
    if budget <= 0:
        return {entry.order: entry for entry in entries}
    by_weight: dict[int, list[LedgerEntry]] = {}
    for entry in entries:
        by_weight.setdefault(entry.fact.weight, []).append(entry)
    over: dict[int, LedgerEntry] = {}
    for weight in sorted(by_weight, reverse=True):
        group = by_weight[weight]
        verdicts: list[str] = []
        for entry in group:
            verdicts.append(selection.verdict(entry))
            if verdicts[-1] == "unknown":
                break  # it may be kept (its tokens tell): offered in rank order below
        else:
            over.update((entry.order, entry) for entry, verdict in zip(group, verdicts, strict=True) if verdict == "over_budget")
            continue
        for entry in sorted(group, key=rank.key, reverse=True):
            if selection.offer(entry) == "over_budget":
                over[entry.order] = entry
    return over


class FactLedger:
    """The `## Fact ledger` handoff section.

    Args:
        max_tokens: budget for the heading plus the section text (0 disables the section).
        protect_first_n: the compressor's `protect_first_n`, to tell its old protected
            opening from a pinned message when both sit ahead of the previous handoff.
        words: the user-words section of the same handoffs, if any: a fact whose user
            message it shows verbatim gets no ledger line (it comes back into the
            ledger once that message no longer fits there).
    """

    title = LEDGER_TITLE

    def __init__(
        self,
        *,
        max_tokens: int = DEFAULT_LEDGER_MAX_TOKENS,
        protect_first_n: int = DEFAULT_PROTECT_FIRST_N,
        words: VerbatimUserWords | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.protect_first_n = protect_first_n
        self.words = words

    def compute(self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter) -> LedgerBuild:
        """Decide the ledger for one compression (pure; `build` renders it). See `DROP_POLICY`."""
        span = read_span(dropped, previous_summary, protect_first_n=self.protect_first_n)
        words = self.words
        keys: dict[int, str] = {}
        entries, repeats = _newest_copies(collect_entries(span, words), keys)
        entries, superseded = _supersede(entries)
        covered: list[LedgerEntry] = []
        if words is not None:
            entries, covered = _shown_elsewhere(entries, words.shown(dropped, previous_summary, counter))
        first_line = turns_line("facts", span, "a newer line overrides an older one.")
        limit = span_budget(span, self.title, self.max_tokens, LEDGER_SPAN_SHARE, counter)
        budget = limit - counter.count_text(f"## {self.title}\n{first_line}\n")
        rank = _Ranking(entries, span, budget)
        share = GROUP_MINOR_SHARE if is_group(span) else MINOR_SHARE
        selection = _Selection(budget=budget, counter=counter, minor_budget=int(self.max_tokens * share), normalised=keys)
        over = _select(entries, rank, selection, budget)
        kept = sorted(selection.accepted.values(), key=lambda e: e.order)
        text: str | None = None
        tokens = 0
        while kept:
            text = "\n".join([first_line] + [e.line for e in kept])
            tokens = counter.count_text(f"## {self.title}\n{text}")
            if tokens <= limit:
                break
            # Line counts do not add up exactly to the whole; drop by the same policy.
            weakest = min(kept, key=rank.key)
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
            in_user_words=tuple(covered),
            turns=span.turns,
            text=text,
            tokens=tokens,
        )

    def build_with_drops(
        self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter
    ) -> tuple[str | None, SectionDrops]:
        """The section text and what it gave up (for the compression event, the log and the metric)."""
        if self.max_tokens <= 0:
            return None, SectionDrops()
        build = self.compute(dropped, previous_summary, counter)
        return build.text, SectionDrops(
            superseded=tuple(e.line for e in build.superseded), over_budget=tuple(e.line for e in build.over_budget)
        )

    def build(self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter) -> str | None:
        """The section text for this compression, or None when nothing needs keeping."""
        if self.max_tokens <= 0:
            return None
        return self.compute(dropped, previous_summary, counter).text
