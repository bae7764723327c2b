"""Deterministic fact extraction: which clauses of a message must survive compression verbatim.

Owns how a message is cut into the minimal clause that carries a fact (the
patterns themselves, for constraints and decisions in six languages, values,
paths, URLs, e-mails, tickets, identifiers and names, are in
`agent.context._fact_patterns`), the weights, and the
deterministic "subject" of a fact (what a newer statement replaces): `k:<key>`
for a key/value statement whose value is a number, path, id or URL
(`timeout = 30s`, `API port: 8443`, `set the timeout to 45 s`, `le port est
8080`, `端口是8080`; read by `agent.context._key_values`), and `c:<object>` for a constraint: its first words once
the polarity and modal words (never/always/don't/must, nie/immer, jamais,
nunca, 不要/必须, никогда...) and filler are removed, so "Never use tabs" and
"Always use tabs" share `c:use tabs`. No LLM, no I/O; never raises on any
text. Knows nothing of handoffs, budgets or rendering (see `agent.context.ledger`).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import TypeAlias

from agent.context._ascii import ascii_twin
from agent.context._fact_gates import gated_spans
from agent.context._fact_patterns import (
    ASCII_NOT_A_RULE,
    CJK,
    CJK_CONSTRAINT_WORDS,
    CLAUSE_SPLIT,
    CONSTRAINT_WORDS,
    LEADING_NUMBER,
    LIST_MARKER,
    NOT_A_RULE,
    PUNCT_STRIP,
    SENTENCE_SPLIT,
    SUBJECT_STOPWORDS,
    word_runs,
)
from agent.context._key_values import UNREAD, KeyValue, key_value_of, key_words, read_statement
from agent.context._key_values import normalise as normalise
from agent.context._rule_compiler import Family
from agent.context._ruleset import RULESET
from agent.context._statements import (
    RULE_REST,
    RULE_WORDS,
    bare_answer,
    closes_statement,
    is_question,
    read_prefilter,
    stated_value,
    words_of,
)
from agent.context.fact_rules import ASSISTANT_RANK, FactKind
from agent.context.fact_rules import Speaker as Speaker

# A fact longer than this is narrowed to its clause, then to a window round the match.
MAX_FACT_CHARS = 220
FACT_WINDOW_CHARS = 90
# Every compression re-reads the previous ledger and overlapping messages: results are cached (values are frozen).
CLASSIFY_CACHE_SIZE = 16_384
EXTRACT_CACHE_SIZE = 4_096
# Fewer words than this make a clause too thin to be a fact on its own.
MIN_IDENTIFIER_FACT_WORDS = 3
MIN_DECISION_FACT_WORDS = 5
# Constraint subjects: the first words of the constrained object.
SUBJECT_MAX_WORDS = 6

# Importance for the budget: what is dropped last, the ranks of `agent.context.fact_rules`. Assistant facts rank
# below all user facts.
USER_WEIGHTS: dict[FactKind, int] = RULESET.ranks
ASSISTANT_WEIGHT = ASSISTANT_RANK
# Most important first; kinds of equal weight in the order of `USER_WEIGHTS` (a set's order follows the hash seed).
_KIND_RANK: dict[FactKind, tuple[int, int]] = {kind: (-weight, i) for i, (kind, weight) in enumerate(USER_WEIGHTS.items())}
# Kinds that make a clause more than "a sentence that mentions some values".
STATEMENT_KINDS: frozenset[FactKind] = frozenset({"constraint", "decision"})

@dataclass(frozen=True, slots=True)
class Fact:
    """One clause that must survive verbatim.

    Attributes:
        text: the clause, a verbatim substring of one line of the message.
        kinds: what the clause states, most important first.
        subjects: what a newer statement replaces (`c:` constraint objects,
            `k:` keys of key/value statements); empty when none is certain.
        needles: the exact values matched (paths, numbers, ids), for de-duplication.
        weight: importance for the budget (higher is dropped later).
        context: for a bare answer, the question it answers (`who: question`), shown beside it.
    """

    text: str
    kinds: tuple[FactKind, ...]
    subjects: tuple[str, ...]
    needles: tuple[str, ...]
    weight: int
    context: str = ""

    @property
    def is_statement(self) -> bool:
        """A constraint or a decision, not just a sentence carrying values."""
        return any(kind in STATEMENT_KINDS for kind in self.kinds)


MAX_QUESTION_CHARS = 120


def answer_fact(answer: str, question: str, asker: str) -> Fact | None:
    """A bare answer ("4471") to `question` as a fact carrying the question, or None if it is no bare value."""
    token = bare_answer(answer, question)
    if token is None:
        return None
    line = next((ln.strip() for ln in reversed(question.splitlines()) if ln.strip()), "")[:MAX_QUESTION_CHARS]
    subject = key_words(line)
    return Fact(
        text=answer.strip(), kinds=("answer",), subjects=(f"q:{subject}",) if subject else (), needles=(token,),
        weight=USER_WEIGHTS["answer"], context=f"{asker}: {line}" if line else "",
    )


def _all_spans(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for pattern in patterns for m in pattern.finditer(text) if m.end() > m.start()]


def _families(text: str, lower: str, *, links: bool = True) -> list[Family]:
    """The families of rules that can match `text` at all (each skipped on its gate), in the order they run;
    without the masking ones (URLs, e-mails) if not `links`."""
    if text.isascii():
        return [f for f in RULESET.families if (links or not f.masks) and f.gate.ascii.passes(text, lower)]
    return [f for f in RULESET.families if (links or not f.masks) and f.gate.full.passes(text, lower)]


def may_decide(lower: str) -> bool:
    """False when no decision rule can match the lower-cased text (it holds none of their literals)."""
    found = RULESET.decision_needles
    if found is None or RULESET.decision_gate is None:
        return True
    # Over a long text `in` tests run at memory speed; over a short one a single scan costs less than the loop.
    if len(lower) > _LONG_TEXT_CHARS:
        return any(needle in lower for needle in found)
    return RULESET.decision_gate.search(lower) is not None


_LONG_TEXT_CHARS = 300


def decision_needles_at(lower: str) -> list[int] | None:
    """The sorted offsets in lower-cased text where a literal a decision rule needs starts; None: no such literals."""
    found = RULESET.ascii_decision_needles if lower.isascii() else RULESET.decision_needles
    if found is None:
        return None
    starts: list[int] = []
    for needle in found:
        at = lower.find(needle)
        while at >= 0:
            starts.append(at)
            at = lower.find(needle, at + 1)
    starts.sort()
    return starts


def decides(lower: str) -> bool:
    """Whether a decision rule matches the lower-cased clause."""
    if not may_decide(lower):
        return False
    return (RULESET.ascii_any_decision if lower.isascii() else RULESET.any_decision).search(lower) is not None


# What the message prefilter said of a clause that is the whole message (see `_classify`).
Prefiltered: TypeAlias = frozenset[str] | bool | None


def _matches(
    text: str, speaker: Speaker, lower: str, words: frozenset[str] | None = None
) -> tuple[list[tuple[FactKind, int, int]], KeyValue]:
    """Every (kind, start, end) in `text` (`lower` is `text.lower()`, `words` its `words_of` if read), and its
    key/value statement if the forms were read (`UNREAD` if not); URLs and e-mails are masked before paths and ids."""
    found: list[tuple[FactKind, int, int]] = []
    if words is None:
        words = words_of(lower)
    # On an ASCII text (and so an ASCII lower()) the patterns run as their ASCII twins (`agent.context._ascii`).
    plain = text.isascii()
    # The constraint and decision rules only run when one of their words is there (see `RULE_WORDS`), or a
    # rule with no whole word may match (`RULE_REST`: the Chinese ones, by their literals).
    rules = not RULE_WORDS.isdisjoint(words) or (not plain and RULE_REST.passes(text, lower, plain))
    # One scan of the combined pattern over the lower-cased text finds the rule words (lower() keeps the
    # offsets unless a character changes length: then each pattern runs on the text).
    same = len(lower) == len(text)
    constraints, decisions = RULESET.constraints[speaker], RULESET.decisions[speaker]
    # A clause's word runs pick the constraint patterns that can match and tell whether any decision one can.
    runs = word_runs(lower) if rules and same and constraints.patterns else None
    if rules and constraints.patterns:
        if runs is not None:
            scan = constraints.scan(text, lower, runs)  # only the patterns that can match
            spans = _lower_spans(lower, scan) if scan is not None else []
        else:
            spans = _all_spans(text, constraints.patterns)
        not_a_rule = ASCII_NOT_A_RULE if plain else NOT_A_RULE
        found.extend(("constraint", s, e) for s, e in spans if not not_a_rule.match(text, e))
    if rules and decisions.patterns and (runs is None or decisions.may_match(text, lower, runs)):
        if may_decide(lower):
            if same:
                spans = _lower_spans(lower, decisions.every(plain))
            else:
                spans = _all_spans(text, decisions.patterns)
            found.extend(("decision", s, e) for s, e in spans)
    masked = text
    families = _families(text, lower)
    linked = 0
    for family in families:
        if not family.masks:
            break
        linked += 1
        spans = gated_spans(masked, family.ascii_rules if plain else family.rules, lower if masked is text else masked.lower())
        _add_spans(found, family.kind, text, spans)
        if spans:
            masked = _mask(masked, spans)  # a masked text of an ASCII text is ASCII
    if masked is text:
        masked_lower, rest = lower, families[linked:]
    else:
        # The other families read the masked text: they are chosen again, and gated, on it (a link's digits,
        # dots and slashes open no pattern there).
        masked_lower = masked.lower()
        rest = _families(masked, masked_lower, links=False)
    for family in rest:
        _add_spans(found, family.kind, text, gated_spans(masked, family.ascii_rules if plain else family.rules, masked_lower))
    key_value = read_statement(text, lower, words, found=bool(found))
    if key_value is not None and key_value is not UNREAD:
        value = key_value[1]
        start = text.rfind(value)
        number = LEADING_NUMBER.match(value)
        if number:
            found.append(("value", start, start + number.end()))
        parts = value.split()
        token = stated_value(parts[0], key_value[0]) if parts else None
        if token is not None and closes_statement(value[value.find(parts[0]) + len(parts[0]):]):
            found.append(("assignment", start, start + len(token)))
    return found, key_value


def _add_spans(found: list[tuple[FactKind, int, int]], kind: FactKind, text: str, spans: list[tuple[int, int]]) -> None:
    """Each span as a match of `kind`, without the trailing punctuation of its text."""
    for start, end in spans:
        needle = text[start:end].rstrip(".,;:!?)")
        if needle:
            found.append((kind, start, start + len(needle)))


def _lower_spans(lower: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in pattern.finditer(lower) if m.end() > m.start()]


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


# `CONSTRAINT_WORDS` without IGNORECASE, for lower-cased ASCII text (its words are all lower-case): a fifth of the time.
_ASCII_CONSTRAINT_WORDS = re.compile(CONSTRAINT_WORDS.pattern)


def _subjects(clause: str, kinds: set[FactKind], key_value: KeyValue) -> tuple[str, ...]:
    subjects: list[str] = []
    if key_value is UNREAD:
        key_value = key_value_of(clause)
    if key_value is not None:
        subjects.append(f"k:{key_value[0]}")
    if "constraint" in kinds:
        body = LIST_MARKER.sub("", clause.strip())
        if body.isascii():  # ASCII: the case-blind scan is the plain one over lower(), the words are casefolded anyway
            stripped = _ASCII_CONSTRAINT_WORDS.sub(" ", body.lower())
        else:
            stripped = CJK_CONSTRAINT_WORDS.sub(" ", CONSTRAINT_WORDS.sub(" ", body))
        words = [w for w in normalise(PUNCT_STRIP.sub(" ", stripped)).split() if w not in SUBJECT_STOPWORDS]
        if words:
            subjects.append("c:" + " ".join(words[:SUBJECT_MAX_WORDS]))
    return tuple(subjects)


def _narrow(sentence: str, start: int, end: int) -> str:
    """The clause of `sentence` holding [start, end); a window round it if the clause is still long."""
    offset = 0
    for part in CLAUSE_SPLIT.split(sentence):
        index = sentence.find(part, offset)
        if index < 0:
            continue
        offset = index + len(part)
        if index <= start < index + len(part) or (start < index + len(part) and end > index):
            if len(part) <= MAX_FACT_CHARS and end <= index + len(part):
                return part
            break
    lo = max(0, start - FACT_WINDOW_CHARS)
    hi = min(len(sentence), end + FACT_WINDOW_CHARS)
    while lo > 0 and not sentence[lo - 1].isspace():
        lo += 1
        if lo >= start:
            lo = start
            break
    while hi < len(sentence) and not sentence[hi].isspace():
        hi -= 1
        if hi <= end:
            hi = end
            break
    return sentence[lo:hi]


# `SENTENCE_SPLIT` over ASCII text (no CJK stop there), opening on the whitespace (which the engine skips to)
# instead of trying the look-behinds at every position: the same cuts (as its ASCII twin).
_ASCII_SENTENCE_SPLIT = ascii_twin(re.compile(r"\s(?<=[.!?]\s)\s*(?=\S)"))
# `LIST_MARKER` opens on one of these or a digit (`\d`: `str.isdecimal`).
_MARKER_OPENERS = "-*•>"


# Every cut of `_ASCII_SENTENCE_SPLIT` follows one of these: one scan opening on the rare character rules most lines out.
_ASCII_SENTENCE_END = ascii_twin(re.compile(r"[.!?]\s"))


def _units(line: str) -> Iterator[str]:
    if line.isascii():
        sentences = _ASCII_SENTENCE_SPLIT.split(line) if _ASCII_SENTENCE_END.search(line) is not None else [line]
    else:
        sentences = SENTENCE_SPLIT.split(line)
    for sentence in sentences:
        sentence = sentence.strip()
        if sentence and (sentence[0] in _MARKER_OPENERS or sentence[0].isdecimal()):
            sentence = LIST_MARKER.sub("", sentence).strip()
        if sentence:
            yield sentence


@lru_cache(maxsize=CLASSIFY_CACHE_SIZE)
def classify(text: str, speaker: Speaker) -> Fact | None:
    """The fact a clause states, or None. Deterministic: parsing a stored fact back gives the same fact."""
    return _classify(text, speaker, text.lower(), None)


def _classify(text: str, speaker: Speaker, lower: str, prefiltered: Prefiltered) -> Fact | None:
    """`classify` with `lower` (`text.lower()`) read once. `prefiltered`: None, or what `read_prefilter` said of
    `text` when it passed (its words, if it read them over the whole of `lower`)."""
    if speaker == "assistant" and not decides(lower):
        return None  # the assistant's clauses only count as decisions: skip the other patterns
    if is_question(text):
        return None  # asking for a value states none; the answer does (see `agent.context.ledger`)
    if speaker == "user" and prefiltered is None:
        holds, prefiltered = read_prefilter(text, lower)
        if not holds:
            return None
    matches, key_value = _matches(text, speaker, lower, prefiltered if isinstance(prefiltered, frozenset) else None)
    if not matches:
        return None
    kinds = {kind for kind, _, _ in matches}
    if speaker == "assistant" and "decision" not in kinds:
        return None
    if _too_thin(text, kinds):
        return None
    ordered = tuple(sorted(kinds, key=_KIND_RANK.__getitem__))
    weight = USER_WEIGHTS[ordered[0]] if speaker == "user" else ASSISTANT_WEIGHT
    needles = tuple(sorted({text[s:e] for kind, s, e in matches if kind not in STATEMENT_KINDS}))
    return Fact(text=text, kinds=ordered, subjects=_subjects(text, kinds, key_value), needles=needles, weight=weight)


def _too_thin(text: str, kinds: set[FactKind]) -> bool:
    """A bare identifier ("your_command_here") or a bare decision opener ("So the plan is:") says nothing."""
    words = len(text.split()) if text.isascii() or not CJK.search(text) else len(text) // 2  # isascii: no scan
    if kinds <= {"identifier"}:
        return words < MIN_IDENTIFIER_FACT_WORDS
    if kinds <= {"decision"}:
        return words < MIN_DECISION_FACT_WORDS
    return False


@lru_cache(maxsize=EXTRACT_CACHE_SIZE)
def extract_facts(text: str, speaker: Speaker) -> tuple[Fact, ...]:
    """The facts of one message, in order, each the minimal verbatim clause holding it.

    Args:
        text: the message text (any language, any size; never raises).
        speaker: "user" facts include constraints and bare values; the
            assistant's only count when it states a decision.
    """
    lower = text.lower()
    # The assistant's clauses only count as decisions: only its lines with a decision literal are read.
    if speaker == "user":
        # The prefilter first: most lines of a chat stop there (an empty text, which has no line, fails it too).
        holds, words = read_prefilter(text, lower)
        if not holds:
            return ()  # no shape of a value and no rule word anywhere in the message
        lines = text.splitlines()
    else:
        lines = _decision_lines(text, lower)
        if not lines:
            return ()
        holds, words = read_prefilter(text, lower)
        if not holds:
            return ()
    facts: list[Fact] = []
    seen: set[str] | None = None  # the de-duplication keys, read once a second fact is found (most messages hold one)
    for line in lines:
        for sentence in _units(line):
            # A sentence short enough is its one clause (what `_clauses` yields for it): no generator to build.
            for clause in (sentence,) if len(sentence) <= MAX_FACT_CHARS else _clauses(sentence, speaker):
                # The whole message as one clause has passed the prefilter above: no second read of it.
                fact = _classify(clause, speaker, lower, words) if clause == text else classify(clause, speaker)
                if fact is None:
                    continue
                if not facts:
                    facts.append(fact)
                    continue
                if seen is None:
                    seen = {normalise(facts[0].text)}
                key = normalise(clause)
                if key not in seen:
                    seen.add(key)
                    facts.append(fact)
    return tuple(facts)


def _decision_lines(text: str, lower: str) -> list[str]:
    """The lines of an assistant message holding a literal a decision pattern needs (`decision_needles_at`).

    Exact: an assistant clause is a fact only when a decision pattern matches in it, which needs one of
    the literals inside the clause, so inside its line (no literal holds a line break).
    """
    if len(lower) != len(text):
        return text.splitlines() if may_decide(lower) else []  # a character changed length: offsets differ
    starts = decision_needles_at(lower)
    if starts is None:
        return text.splitlines()  # no literal every decision needs: every line is read
    if not starts:
        return []
    lines = text.splitlines()
    ends = list(accumulate(map(len, text.splitlines(keepends=True))))  # line i spans [ends[i-1], ends[i])
    wanted = sorted({bisect_right(ends, start) for start in starts})
    return [lines[index] for index in wanted if index < len(lines)]


def _clauses(sentence: str, speaker: Speaker) -> Iterator[str]:
    if len(sentence) <= MAX_FACT_CHARS:
        yield sentence
        return
    for kind, start, end in sorted(_matches(sentence, speaker, sentence.lower())[0], key=lambda m: m[1]):
        if speaker == "assistant" and kind != "decision":
            continue
        clause = _narrow(sentence, start, end).strip()
        if clause:
            yield clause
