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
from typing import Literal, TypeAlias

from agent.context._ascii import ascii_twin
from agent.context._fact_gates import Gated, gated, gated_spans
from agent.context._fact_patterns import (
    ANY_DECISION_LOWER,
    ASCII_DECISION_LOWER,
    ASCII_NOT_A_RULE,
    CJK,
    CJK_CONSTRAINT_WORDS,
    CLAUSE_SPLIT,
    CONSTRAINT_PATTERNS,
    CONSTRAINT_WORDS,
    DECISION_PATTERNS,
    DIGIT,
    KIND_PATTERNS,
    LEADING_NUMBER,
    LIST_MARKER,
    NAME_LEAD_LOWER,
    NOT_A_RULE,
    PUNCT_STRIP,
    SENTENCE_SPLIT,
    SUBJECT_STOPWORDS,
    FactKind,
    constraint_scan_of,
    decides,
    decision_needles_at,
    may_decide,
    may_decide_of,
    word_runs,
)
from agent.context._key_values import UNREAD, KeyValue, key_value_of, key_words, read_statement
from agent.context._key_values import normalise as normalise
from agent.context._literals import ascii_literals
from agent.context._statements import (
    ASCII_CASED_SHAPES,
    CASED_SHAPES,
    RULE_WORDS,
    bare_answer,
    closes_statement,
    is_question,
    read_prefilter,
    stated_value,
    words_of,
)

Speaker: TypeAlias = Literal["user", "assistant"]

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

# Importance for the budget: what is dropped last. Assistant facts rank below all user facts.
# A plain statement of an exact value ("the door code is 4471") and a bare answer rank first:
# they are what people come back for, word for word.
USER_WEIGHTS: dict[FactKind, int] = {
    "assignment": 95,
    "answer": 95,
    "constraint": 90,
    "decision": 85,
    "value": 75,
    "ticket": 70,
    "url": 70,
    "email": 70,
    "name": 70,
    "path": 65,
    "identifier": 55,
}
ASSISTANT_WEIGHT = 45
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


_FAMILIES: dict[FactKind, tuple[Gated, ...]] = {kind: gated(patterns) for kind, patterns in KIND_PATTERNS}
# The same over an ASCII text (most chat lines): only the literals that can be in it, the patterns' ASCII twins.
_ASCII_FAMILIES: dict[FactKind, tuple[Gated, ...]] = {kind: gated(patterns, ascii=True) for kind, patterns in KIND_PATTERNS}


_ASCII_DIGIT = ascii_twin(DIGIT)
# `NAME_LEAD_LOWER`, an alternation of literals, over an ASCII text: the trie of its ASCII ones (found where it finds one).
_ASCII_NAME_LEAD = ascii_literals(tuple(NAME_LEAD_LOWER.pattern.split("|"))) or NAME_LEAD_LOWER


def _families(text: str, lower: str, *, links: bool = True) -> list[tuple[FactKind, tuple[Gated, ...]]]:
    """The pattern families that can match `text` at all (each skipped on a cheap test of what it needs), in
    the order of `KIND_PATTERNS`; without the URL and e-mail ones if not `links`."""
    plain = text.isascii()  # an ASCII text has an ASCII lower(): the ASCII literals and twins
    families = _ASCII_FAMILIES if plain else _FAMILIES
    wanted: list[tuple[FactKind, tuple[Gated, ...]]] = []
    if links and ("://" in text or "www." in lower):
        wanted.append(("url", families["url"]))
    if links and "@" in text:
        wanted.append(("email", families["email"]))
    digit = (_ASCII_DIGIT if plain else DIGIT).search(text) is not None
    if digit:
        wanted.append(("value", families["value"]))
        wanted.append(("ticket", families["ticket"]))
    if "/" in text or "\\" in text or "." in text:
        wanted.append(("path", families["path"]))
    # A name is capitalised (or CJK): an ASCII text with no capital (equal to its lower()) names none.
    if (not plain or text != lower) and (_ASCII_NAME_LEAD if plain else NAME_LEAD_LOWER).search(lower) is not None:
        wanted.append(("name", families["name"]))
    # Over ASCII a capital makes the text differ from its lower() (a comparison of bytes, before any scan).
    if digit or "`" in text or "_" in text or (
        (text != lower and ASCII_CASED_SHAPES.search(text) is not None) if plain else CASED_SHAPES.search(text) is not None
    ):
        wanted.append(("identifier", families["identifier"]))
    return wanted


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
    # The rule patterns only run when one of their words (or CJK text) is there: see `RULE_WORDS`.
    rules = not RULE_WORDS.isdisjoint(words) or (not plain and CJK.search(text) is not None)
    # One scan of the combined pattern over the lower-cased text finds the rule words (lower() keeps the
    # offsets unless a character changes length: then each pattern runs on the text).
    same = len(lower) == len(text)
    # A user clause's word runs pick the constraint patterns that can match and tell whether any decision one can.
    runs = word_runs(lower) if rules and same and speaker == "user" else None
    if rules and speaker == "user":
        if runs is not None:
            scan = constraint_scan_of(text, runs)  # only the languages' patterns that can match
            spans = _lower_spans(lower, scan) if scan is not None else []
        else:
            spans = _all_spans(text, CONSTRAINT_PATTERNS)
        not_a_rule = ASCII_NOT_A_RULE if plain else NOT_A_RULE
        found.extend(("constraint", s, e) for s, e in spans if not not_a_rule.match(text, e))
    if rules and (runs is None or may_decide_of(text, runs)):
        if may_decide(lower):
            if same:
                spans = _lower_spans(lower, ASCII_DECISION_LOWER if plain else ANY_DECISION_LOWER)
            else:
                spans = _all_spans(text, DECISION_PATTERNS)
            found.extend(("decision", s, e) for s, e in spans)
    masked = text
    families = _families(text, lower)
    linked = 0
    for kind, patterns in families:
        if kind != "url" and kind != "email":
            break
        linked += 1
        spans = gated_spans(masked, patterns, lower if masked is text else masked.lower())
        _add_spans(found, kind, text, spans)
        if spans:
            masked = _mask(masked, spans)  # URL and e-mail patterns have no gate: the same spans
    if masked is text:
        masked_lower, rest = lower, families[linked:]
    else:
        # The other families read the masked text: they are chosen again, and gated, on it (a link's digits,
        # dots and slashes open no pattern there).
        masked_lower = masked.lower()
        rest = _families(masked, masked_lower, links=False)
    for kind, patterns in rest:
        _add_spans(found, kind, text, gated_spans(masked, patterns, masked_lower))
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
