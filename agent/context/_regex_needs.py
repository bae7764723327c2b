"""What a regular expression cannot match without: read from its parsed form, for the fact rule compiler.

Owns `needs(pattern)`: every way the pattern can match, written as a string of its literal characters (lower-cased)
and markers for what is not spelled out (a word boundary, a whitespace character, a run of whitespace, any text, a
digit, a capital). From those strings the compiler (`agent.context._rule_compiler`) derives the literals, the
character classes and the whole words a text must hold for the pattern to match somewhere in it. Sound by
construction: every part left unknown becomes "any text", which only ever rules out less. Pure functions.

Reads the parse tree of the standard library's own regex parser (`re._parser`, the module `re.compile` uses).
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from typing import Any

_PARSER: Any = importlib.import_module("re._parser")  # no public parse tree; typeshed has no stub for it
_C: Any = importlib.import_module("re._constants")

# Markers, private-use characters no pattern of the ledger spells.
BOUNDARY = "\ue000"  # zero-width: a word boundary, the start or the end of the text
SPACE = "\ue001"  # one whitespace character
SPACES = "\ue002"  # zero or more whitespace characters
ANY = "\ue003"  # any text, possibly empty
DIGIT = "\ue004"  # one digit
CAPITAL = "\ue005"  # one character that lower-casing changes (a capital of any script)
MARKERS = frozenset(BOUNDARY + SPACE + SPACES + ANY + DIGIT + CAPITAL)

# More ways than this and a part is "any text" (sound; only the gate gets weaker).
MAX_WAYS = 4_000
# A class of at most this many plain characters is read as that many ways.
MAX_CLASS_CHARS = 8
# A bounded repeat up to this count is written out.
MAX_WRITTEN_REPEAT = 3

_ANY: frozenset[str] = frozenset({ANY})
_EMPTY: frozenset[str] = frozenset({""})
_WHITESPACE = frozenset(" \t\n\r\f\v")


def needs(pattern: re.Pattern[str]) -> frozenset[str]:
    """Every way `pattern` matches, as strings of lower-cased literals and markers (see the module docstring)."""
    if not MARKERS.isdisjoint(pattern.pattern):
        return _ANY
    tree = _PARSER.parse(pattern.pattern, pattern.flags)
    return _simplify(_sequence(tree, bool(pattern.flags & re.IGNORECASE)))


def _simplify(ways: frozenset[str]) -> frozenset[str]:
    out = set()
    for way in ways:
        previous = None
        while previous != way:
            previous = way
            way = way.replace(ANY + ANY, ANY).replace(SPACES + SPACES, SPACES).replace(ANY + SPACES, ANY)
            way = way.replace(SPACES + ANY, ANY)
        out.add(way)
    return frozenset(out)


def _product(left: frozenset[str], right: frozenset[str]) -> frozenset[str]:
    if len(left) * len(right) > MAX_WAYS:
        return frozenset(way + ANY for way in left) if len(left) <= MAX_WAYS else _ANY
    return frozenset(a + b for a in left for b in right)


def _sequence(items: Iterable[tuple[Any, Any]], icase: bool) -> frozenset[str]:
    ways = _EMPTY
    for op, av in items:
        ways = _product(ways, _item(op, av, icase))
    return ways


def _item(op: Any, av: Any, icase: bool) -> frozenset[str]:  # noqa: PLR0911 - one branch per opcode
    if op is _C.LITERAL:
        char = chr(av)
        return frozenset({char.lower()})
    if op is _C.IN:
        return _class(av, icase)
    if op is _C.AT:
        return _EMPTY if av is _C.AT_NON_BOUNDARY else frozenset({BOUNDARY})
    if op is _C.BRANCH:
        return frozenset().union(*(_sequence(branch, icase) for branch in av[1]))
    if op is _C.SUBPATTERN:
        _group, add, remove, body = av
        inner = (icase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
        return _sequence(body, inner)
    if op is _C.ATOMIC_GROUP:
        return _sequence(av, icase)
    if op is _C.ASSERT:
        # A look-around that must hold: what it reads is in the text, next to the match, not inside its order.
        return frozenset(ANY + way + ANY for way in _sequence(av[1], icase))
    if op is _C.ASSERT_NOT:
        return _EMPTY
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
        low, high, body = av
        return _repeat(low, high, _sequence(body, icase))
    return _ANY  # ANY, NOT_LITERAL, GROUPREF, ...: one or more characters not spelled out


def _repeat(low: int, high: int, once: frozenset[str]) -> frozenset[str]:
    if high <= MAX_WRITTEN_REPEAT:
        found: set[str] = set()
        ways = _EMPTY
        for count in range(high + 1):
            if count >= low:
                found |= ways
            ways = _product(ways, once)
            if ways == _ANY:
                return _ANY if low == 0 else ways
        return frozenset(found)
    if once == frozenset({SPACE}):
        return frozenset({SPACE * low + SPACES})
    if low == 0:
        return _ANY
    ways = _EMPTY
    for _ in range(min(low, 2)):
        ways = _product(ways, once)
    return frozenset(way + ANY for way in ways)


def _class(items: list[tuple[Any, Any]], icase: bool) -> frozenset[str]:
    """One character of a class: its characters when few, else a marker for what they all are."""
    chars: set[str] = set()
    categories = set()
    for op, av in items:
        if op is _C.NEGATE:
            return _ANY
        if op is _C.LITERAL:
            chars.add(chr(av))
        elif op is _C.RANGE:
            low, high = av
            if high - low > 4_096:
                return _ANY
            chars.update(map(chr, range(low, high + 1)))
        elif op is _C.CATEGORY:
            categories.add(av)
        else:
            return _ANY
    if not categories and len({c.lower() for c in chars}) <= MAX_CLASS_CHARS:
        return frozenset(c.lower() for c in chars)
    if categories <= {_C.CATEGORY_DIGIT} and all(c.isdecimal() for c in chars):
        return frozenset({DIGIT})
    if categories <= {_C.CATEGORY_SPACE} and chars <= _WHITESPACE:
        return frozenset({SPACE})
    if not categories and not icase and all(c.lower() != c for c in chars):
        return frozenset({CAPITAL})
    return _ANY
