"""The one compile step of the fact rules: from the records of `agent.context.fact_rules` to what runs fast.

Owns, derived once at import from each rule's pattern (what it cannot match without, `agent.context._regex_needs`):
- its gate: the literals (in the lower-cased clause), or the digit or the capital, one of which every match holds;
- its whole words: a word every match holds whole (as a run of word characters, and as a word of `words_of`),
  when every way to match has one;
- its forms: the pattern, its ASCII twin and its case-sensitive twin over the lower-cased text (`agent.context._ascii`),
  and a pattern opening on a look-behind and a run of digits turned to open on the digit;
- the families of the value-like kinds (each with the gate of any of its rules), and the constraint and decision
  groups (their combined scan over the lower-cased clause, the words and literals that choose their patterns).

Every gate is exact: it only turns down a clause no pattern behind it can match, so `compile_rules(..., fast=False)`
(no gate, the plain patterns) extracts the same facts; tests/agent/context/test_fact_gates.py compares the two.
What the gates buy: a few milliseconds per compression of a long group chat, next to a summary call of seconds
(docs/performance.md).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from agent.context._ascii import ascii_twin, has_capital, lowered_twin
from agent.context._regex_needs import needs
from agent.context._rule_gates import Check, Gate, GateCheck, check, rule_gate, whole_words
from agent.context.fact_rules import FactKind, FactRule, Speaker

# One rule behind its gates, as `agent.context._fact_gates.gated_spans` runs it: the pattern (or its twin), the
# literal the lower-cased text must hold, the alternation it must hold, whether the text must hold a capital
# (differ from its lower()), and whether the pattern runs on the lower-cased text.
Gated = tuple[re.Pattern[str], str | None, re.Pattern[str] | None, bool, bool]

_WORD_CHAR = re.compile(r"\w")


def is_run_char(char: str) -> bool:
    """A character of a run of word characters (`\\w`), what `word_runs` splits text into."""
    return _WORD_CHAR.match(char) is not None


# A pattern opening on a look-behind and a run of digits: at every position the engine tries the look-behind;
# opening on the digit (which it skips to) finds the same matches (the look-behind then reads the digit too).
_OPENS_ON_LOOKBEHIND = re.compile(r"^\(\?<!(\[(?:\\.|[^\]\\])+\])\)\\d\+")


def _opened(pattern: re.Pattern[str]) -> re.Pattern[str]:
    found = _OPENS_ON_LOOKBEHIND.match(pattern.pattern)
    if found is None:
        return pattern
    rewritten = rf"\d(?<!{found.group(1)}\d)\d*" + pattern.pattern[found.end():]
    return re.compile(rewritten, pattern.flags)


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A rule with what the compiler derived from it."""

    rule: FactRule
    pattern: re.Pattern[str]
    gate: Gate
    runs: frozenset[str] | None  # whole runs of word characters (`word_runs`), one of which each match holds

    @property
    def kind(self) -> FactKind:
        return self.rule.kind


def _pattern(rule: FactRule) -> re.Pattern[str]:
    return re.compile(rule.pattern, re.IGNORECASE if rule.ignore_case else 0)


def compile_rule(rule: FactRule) -> CompiledRule:
    pattern = _pattern(rule)
    ways = needs(pattern)
    return CompiledRule(rule, pattern, rule_gate(ways), whole_words(ways, is_run_char))


def gated_form(compiled: CompiledRule, *, ascii: bool, fast: bool = True) -> Gated | None:
    """The rule as `gated_spans` runs it (None: it cannot match an ASCII text, when `ascii`)."""
    if not fast:
        return compiled.pattern, None, None, False, False
    gate = check(compiled.gate, ascii=ascii)
    if gate.never:
        return None  # only non-ASCII literals open it
    literal, alternation = gate.substring, gate.scan
    if gate.capital and (literal is not None or alternation is not None):
        literal, alternation = None, None  # a capital or a literal: either opens it; run it
    if gate.always and gate.needs_digit is not None:
        alternation = gate.needs_digit
    capital = gate.needs_capital or (gate.capital and literal is None and alternation is None)
    run = _opened(compiled.pattern)
    on_lower = False
    if ascii:
        lowered = lowered_twin(run)
        run, on_lower = (lowered, True) if lowered is not None else (ascii_twin(run), False)
    return run, literal, alternation, capital, on_lower


@dataclass(frozen=True, slots=True)
class Family:
    """The rules of one kind, in order, with the gate of any of them (for a whole text and an ASCII one)."""

    kind: FactKind
    masks: bool
    rules: tuple[Gated, ...]
    ascii_rules: tuple[Gated, ...]
    gate: GateCheck

    def may_match(self, text: str, lower: str, plain: bool) -> bool:
        """False when no rule of the family can match `text` (`lower` is `text.lower()`, `plain`: it is ASCII)."""
        return (self.gate.ascii if plain else self.gate.full).passes(text, lower)


def _union_gate(rules: list[CompiledRule]) -> Gate:
    if not rules:
        return Gate()
    gate = rules[0].gate
    for compiled in rules[1:]:
        gate = gate.union(compiled.gate)
    return gate


def family(kind: FactKind, rules: list[CompiledRule], *, fast: bool = True) -> Family:
    forms = tuple(form for c in rules if (form := gated_form(c, ascii=False, fast=fast)) is not None)
    ascii_forms = tuple(form for c in rules if (form := gated_form(c, ascii=True, fast=fast)) is not None)
    gate = GateCheck(Check(always=True), Check(always=True))
    if fast:  # over an ASCII text, the gate of the rules that can match one
        on_ascii = [c for c in rules if not check(c.gate, ascii=True).never]
        gate = GateCheck(check(_union_gate(rules), ascii=False), check(_union_gate(on_ascii), ascii=True))
    return Family(kind, any(c.rule.masks for c in rules), forms, ascii_forms, gate)


@dataclass(frozen=True, slots=True)
class RuleGroup:
    """The rules of a kind read as one scan over the lower-cased clause (constraints, decisions): the scan of those
    that may match, chosen by the whole words of each and, for a rule with none, by its gate."""

    patterns: tuple[re.Pattern[str], ...]
    worded: tuple[tuple[int, frozenset[str]], ...]  # (bit, whole runs of word characters one of which it needs)
    wordless: tuple[tuple[int, Check], ...]  # (bit, its gate over any text), for the rules without such words
    ascii_wordless: tuple[tuple[int, Check], ...]  # the same over an ASCII text (those that can match one)
    words: frozenset[str]  # every rule's words
    any_lower: re.Pattern[str]  # every pattern, as one scan over the lower-cased text
    fast: bool

    def scan(self, text: str, lower: str, runs: frozenset[str]) -> re.Pattern[str] | None:
        """The combined scan of the patterns that may match `lower` (`text.lower()`, whose word runs are `runs`),
        as its ASCII twin over an ASCII text; None when none may."""
        if not self.fast:
            return self.any_lower
        mask = 0
        plain = text.isascii()
        for bit, words in self.worded:
            if not words.isdisjoint(runs):
                mask |= bit
        for bit, gate in self.ascii_wordless if plain else self.wordless:
            if gate.passes(text, lower):
                mask |= bit
        return _union(self.patterns, mask, plain) if mask else None

    def may_match(self, text: str, lower: str, runs: frozenset[str]) -> bool:
        """False when no pattern of the group can match `lower` (`text.lower()`, whose word runs are `runs`)."""
        if not self.fast or not self.words.isdisjoint(runs):
            return True
        return any(gate.passes(text, lower) for _, gate in (self.ascii_wordless if text.isascii() else self.wordless))

    def every(self, plain: bool) -> re.Pattern[str]:
        """Every pattern as one scan over the lower-cased text (its ASCII twin over an ASCII one)."""
        return _union(self.patterns, (1 << len(self.patterns)) - 1, plain) if self.fast else self.any_lower


@lru_cache(maxsize=1024)
def _union(patterns: tuple[re.Pattern[str], ...], mask: int, plain: bool) -> re.Pattern[str]:
    union = re.compile("|".join(f"(?:{p.pattern})" for bit, p in enumerate(patterns) if mask >> bit & 1))
    return ascii_twin(union) if plain else union


def _caseless(rule: FactRule) -> bool:
    """Whether the rule reads the lower-cased text as it reads the text: case-blind with no capital in it, or
    with no letter that has a case at all."""
    if rule.ignore_case:
        return not has_capital(rule.pattern)
    return rule.pattern.lower() == rule.pattern.upper()


def group(rules: list[CompiledRule], *, fast: bool = True) -> RuleGroup:
    for compiled in rules:
        if not _caseless(compiled.rule):
            raise ValueError(f"the {compiled.kind} rule {compiled.rule.pattern[:40]!r}... must be lower case (case-blind)")
    patterns = tuple(c.pattern for c in rules)
    any_lower = re.compile("|".join(f"(?:{c.rule.pattern})" for c in rules)) if rules else re.compile("(?!)")
    worded = tuple((1 << bit, c.runs) for bit, c in enumerate(rules) if c.runs is not None)
    wordless = tuple((1 << bit, check(c.gate, ascii=False)) for bit, c in enumerate(rules) if c.runs is None)
    ascii_wordless = tuple(
        (1 << bit, gate) for bit, c in enumerate(rules) if c.runs is None and not (gate := check(c.gate, ascii=True)).never
    )
    words = frozenset().union(*(c.runs for c in rules if c.runs is not None))
    return RuleGroup(patterns, worded, wordless, ascii_wordless, words, any_lower, fast)


def scoped(rules: Iterable[CompiledRule], speaker: Speaker) -> list[CompiledRule]:
    return [c for c in rules if speaker in c.rule.scope]


def words_for(rules: Iterable[CompiledRule], is_word: Callable[[str], bool]) -> tuple[frozenset[str], GateCheck]:
    """The whole words (by `is_word`) one of which a text holds when a rule with words matches in it, and the gate
    of the rules without any (one of them may match only where it passes; with none, it passes nothing)."""
    words: set[str] = set()
    rest = Gate()
    for compiled in rules:
        found = whole_words(needs(compiled.pattern), is_word)
        if found is None:
            rest = rest.union(compiled.gate)
        else:
            words |= found
    return frozenset(words), GateCheck.of(rest)


def needles(rules: Iterable[CompiledRule]) -> tuple[str, ...] | None:
    """The literals one of which a match of any rule holds (in the lower-cased text); None when a rule has none."""
    found: set[str] = set()
    for compiled in rules:
        if not compiled.gate.literal:
            return None
        found |= compiled.gate.pieces
    return tuple(sorted(found))


def ways_of(rule: FactRule) -> frozenset[str]:
    """Every way the rule matches (see `agent.context._regex_needs`), for tests and the reader."""
    return needs(_pattern(rule))

