"""The gates and gate words of one fact rule, read from every way it can match (`agent.context._regex_needs`).

Owns `rule_gate` (what a text must hold for the rule to match: a few literals, or short shapes of literals and
digits such as ":" then two digits, or a digit, or a capital), `whole_words` (words one of which every match holds
whole) and `GateCheck`, a gate compiled to the cheapest tests that answer it (a substring test, one scan, a
comparison with the lower-cased text). Exact: a gate only turns down a text the rule cannot match in. Pure.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent.context._literals import ascii_literals, literals
from agent.context._regex_needs import BOUNDARY, CAPITAL, DIGIT, MARKERS, SPACE, SPACES

# A literal this short and this common passes on nearly every clause: no gate worth a scan.
_WEAK = 10
# What splits a way to match into pieces: any marker but a boundary (zero-width) and a digit (kept in a shape).
_SPLIT = re.compile("[" + "".join(sorted(MARKERS - {BOUNDARY, DIGIT})) + "]")


@dataclass(frozen=True, slots=True)
class Gate:
    """What a text must hold for a rule (or any rule of a family) to match: one of `pieces` in its lower-cased
    form (literals, a digit marker standing for any digit), or a digit (`digit`), or a character lower() changes
    (`capital`); `always`: no such choice. And, whatever it holds of those, a digit if `needs_digit`, a capital if
    `needs_capital`. An empty gate passes nothing."""

    pieces: frozenset[str] = frozenset()
    digit: bool = False
    capital: bool = False
    always: bool = False
    needs_digit: bool = False
    needs_capital: bool = False

    def union(self, other: Gate) -> Gate:
        """A text any of the two gates passes."""
        digit, capital = self.needs_digit and other.needs_digit, self.needs_capital and other.needs_capital
        if self.always or other.always:
            return Gate(always=True, needs_digit=digit, needs_capital=capital)
        return Gate(
            _shortest(self.pieces | other.pieces), self.digit or other.digit, self.capital or other.capital,
            needs_digit=digit, needs_capital=capital,
        )

    @property
    def literal(self) -> bool:
        """Only literals (no digit, no capital, no shape): what substring tests answer."""
        return not (self.always or self.digit or self.capital) and all(DIGIT not in piece for piece in self.pieces)


def _shortest(pieces: frozenset[str]) -> frozenset[str]:
    """The pieces without those holding another (a text holding the longer one holds the shorter)."""
    return frozenset(p for p in pieces if not any(q != p and q in p for q in pieces))


def _atoms(way: str) -> set[str]:
    """The pieces of a way to match (a boundary is zero-width: the characters round it are adjacent), a piece
    of digits alone read as a digit, and the digit and capital markers it holds."""
    atoms = set()
    for piece in _SPLIT.split(way.replace(BOUNDARY, "")):
        if piece:
            atoms.add(DIGIT if not piece.replace(DIGIT, "") else _core(piece) if DIGIT in piece else piece)
    atoms.update(marker for marker in (DIGIT, CAPITAL) if marker in way)
    return atoms


# A shape of literals and digits is cut to its rarest few characters (any part of a piece a match holds is held
# too): "D.D" of an IP address, "-D" of a date, where every spelling of the whole would be one more alternative.
_SHAPE_CHARS = 3


def _core(piece: str) -> str:
    spelled = max(piece.split(DIGIT), key=len)
    if len(spelled) >= 2:
        return spelled  # a literal of its own: a substring test or a branch of a trie
    cuts = {piece[start:start + size] for size in range(1, _SHAPE_CHARS + 1) for start in range(len(piece) - size + 1)}
    return max((cut for cut in cuts if cut.replace(DIGIT, "")), key=lambda cut: (_score(cut), cut))


def _score(atom: str) -> int:
    """How rare an atom is in chat text (higher: a better gate)."""
    if atom == DIGIT:
        return 40
    if atom == CAPITAL:
        return 30
    spelled = atom.replace(DIGIT, "")
    digits = len(atom) - len(spelled)
    if len(spelled) >= 2:
        return 100 + len(atom)
    common = spelled.isascii() and spelled.isalnum()
    return (_WEAK if common else 50) + (45 if digits else 0) + digits


def _gate_of(atoms: Iterable[str], *, needs_digit: bool, needs_capital: bool) -> Gate:
    chosen = set(atoms)
    pieces = _shortest(frozenset(a for a in chosen if a not in (DIGIT, CAPITAL)))
    return Gate(pieces, DIGIT in chosen, CAPITAL in chosen, needs_digit=needs_digit, needs_capital=needs_capital)


def rule_gate(ways: frozenset[str]) -> Gate:
    """The gate of a rule: for each way to match its rarest atom; when one is too common to gate anything, the
    rarest atom every way shares; no gate when there is none. Every way holding a digit (a capital): it needs one."""
    per_way = [_atoms(way) for way in ways]
    needs_digit = bool(ways) and all(DIGIT in way for way in ways)
    needs_capital = bool(ways) and all(CAPITAL in way for way in ways)
    if not per_way or any(not atoms for atoms in per_way):
        return Gate(always=True, needs_digit=needs_digit, needs_capital=needs_capital)
    best = [max(atoms, key=lambda a: (_score(a), a)) for atoms in per_way]
    shared = set.intersection(*per_way)
    if DIGIT in best and needs_digit:
        return Gate(always=True, needs_digit=True, needs_capital=needs_capital)  # the digit alone tells as much
    if min(map(_score, best)) > _WEAK:
        return _gate_of(best, needs_digit=needs_digit, needs_capital=needs_capital)
    if shared and max(map(_score, shared)) > _WEAK:
        return _gate_of({max(shared, key=lambda a: (_score(a), a))}, needs_digit=needs_digit, needs_capital=needs_capital)
    return Gate(always=True, needs_digit=needs_digit, needs_capital=needs_capital)


# Function words of the ledger's languages, in nearly every chat line: a gate word among them lets most lines
# through. A way to match is gated by its other whole words ("stop" of "stop using", "plan" of "the plan is").
COMMON_WORDS = frozenset(
    "a all an and at be but go i in is it keep make my of on please so stick switch the to under use using with "
    "would you just need we "
    "auf bei es fall ich ist je il me mein mi ne noch nicht nous nos que con sur wir "
    "будем в меня ни случае".split()
)


def whole_words(ways: frozenset[str], is_word: Callable[[str], bool]) -> frozenset[str] | None:
    """Words one of which every match holds whole (bounded on both sides by a word boundary, a space or a character
    that is no word character by `is_word`): of each way to match, its whole words outside `COMMON_WORDS` (its
    longest whole word if all are common); None when a way has none."""
    words: set[str] = set()
    for way in ways:
        found = _bounded_words(way, is_word)
        if not found:
            return None
        rare = [word for word in found if word not in COMMON_WORDS]
        words.update(rare or [max(found, key=len)])
    return frozenset(words)


def _bounded(way: str, at: int, step: int, is_word: Callable[[str], bool]) -> bool:
    """Whether the character of `way` next to a run (at `at`, looking in direction `step`) bounds it."""
    if not 0 <= at < len(way):
        return False  # the edge of the pattern: what is next to the match is unknown
    char = way[at]
    if char == SPACES:  # zero or more spaces: bounded when what is beyond them bounds it too
        return _bounded(way, at + step, step, is_word) and way[at + step] != SPACES
    return char in (BOUNDARY, SPACE) or (char not in MARKERS and not is_word(char))


def _bounded_words(way: str, is_word: Callable[[str], bool]) -> list[str]:
    """The whole words of a way to match (runs of `is_word` characters bounded on both sides)."""
    found: list[str] = []
    index = 0
    while index < len(way):
        if way[index] in MARKERS or not is_word(way[index]):
            index += 1
            continue
        end = index
        while end < len(way) and way[end] not in MARKERS and is_word(way[end]):
            end += 1
        if _bounded(way, index - 1, -1, is_word) and _bounded(way, end, 1, is_word):
            found.append(way[index:end])
        index = end
    return found


@dataclass(frozen=True, slots=True)
class Check:
    """A gate as the tests that answer it over one kind of text: first what it needs (a capital: the text differs
    from its lower(); a digit: a scan), then one of: always, a capital, a substring of the lower-cased text, a scan
    of the lower-cased text."""

    always: bool = False
    capital: bool = False
    substring: str | None = None
    scan: re.Pattern[str] | None = None
    needs_capital: bool = False
    needs_digit: re.Pattern[str] | None = None

    def passes(self, text: str, lower: str) -> bool:
        if self.needs_capital and text == lower:
            return False
        if self.needs_digit is not None and self.needs_digit.search(text) is None:
            return False
        if self.always or (self.capital and text != lower):
            return True
        if self.substring is not None and self.substring in lower:
            return True
        return self.scan is not None and self.scan.search(lower) is not None

    @property
    def never(self) -> bool:
        return not (self.always or self.capital or self.substring is not None or self.scan is not None)


def _shape(piece: str, *, ascii: bool) -> str:
    digit = "[0-9]" if ascii else r"\d"
    return "".join(digit if char == DIGIT else re.escape(char) for char in piece)


def check(gate: Gate, *, ascii: bool) -> Check:
    """`gate` over any text, or (`ascii`) over an ASCII one: only its ASCII pieces can be there."""
    digit = re.compile("[0-9]" if ascii else r"\d")
    needs_digit = digit if gate.needs_digit else None
    if gate.always or (gate.digit and gate.needs_digit and not gate.pieces and not gate.capital):
        return Check(always=True, needs_capital=gate.needs_capital, needs_digit=needs_digit)
    pieces = sorted(p for p in gate.pieces if p.replace(DIGIT, "").isascii() or not ascii)
    plain = [p for p in pieces if DIGIT not in p]
    shaped = [p for p in pieces if DIGIT in p]
    substring = plain[0] if len(plain) == 1 and not gate.digit and not shaped else None
    parts: list[str] = []
    if plain and substring is None:
        trie = ascii_literals(tuple(plain)) if ascii else literals(tuple(plain))
        parts.append(trie.pattern if trie is not None else "(?!)")
    parts.extend(_shape(p, ascii=ascii) for p in shaped)
    if gate.digit:
        parts.append(digit.pattern)
    scan = re.compile("|".join(parts)) if parts else None
    return Check(False, gate.capital, substring, scan, gate.needs_capital, needs_digit)


@dataclass(frozen=True, slots=True)
class GateCheck:
    """A gate compiled for any text and for an ASCII one."""

    full: Check
    ascii: Check

    @classmethod
    def of(cls, gate: Gate) -> GateCheck:
        return cls(check(gate, ascii=False), check(gate, ascii=True))

    def passes(self, text: str, lower: str, plain: bool) -> bool:
        """Whether `text` (`lower` is `text.lower()`, `plain` whether it is ASCII) passes the gate."""
        return (self.ascii if plain else self.full).passes(text, lower)
