"""ASCII twins of the fact patterns: the same matches on ASCII text, found by the engine's faster ASCII tables.

Owns `ascii_twin(pattern)`: the pattern compiled with `re.ASCII`, its `\\s` widened to the four ASCII characters
Unicode also counts as whitespace (U+001C..U+001F, which `re.ASCII` leaves out). On a text whose `isascii()` is
true it finds exactly what the pattern finds: `\\d`, `\\w`, `\\b` and the widened `\\s` hold the same ASCII
characters in both modes, and case-blind matching of an ASCII character is ASCII lower-casing in both, unless
the pattern names one of the four non-ASCII characters whose case partner is ASCII (İ, ı, ſ, K): such a
pattern has no twin. Most chat lines are ASCII, and most of the time of extraction is the regex engine's
per-character loop, where the ASCII tables (no Unicode database lookup per character) cost about a quarter less.
Pure functions, no I/O.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

# Non-ASCII characters that match an ASCII one case-blind (U+0130 and U+212A lower-case to "i" and "k";
# U+0131 and U+017F upper-case to "I" and "S").
_ASCII_PARTNERS = frozenset("\u0130\u0131\u017f\u212a")
_ESCAPED = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")
# Any "a-b" of the source (a hyphen outside a class is taken for a range too: only ever a refusal more).
_RANGE = re.compile(r"(.)-(.)", re.DOTALL)
_WIDE_SPACE = r"\s\x1c-\x1f"


def _names_a_partner(source: str) -> bool:
    """Whether the source names one of `_ASCII_PARTNERS`, itself or inside a range."""
    decoded = _ESCAPED.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), source)
    if not _ASCII_PARTNERS.isdisjoint(decoded):
        return True
    return any(ord(m.group(1)) <= ord(c) <= ord(m.group(2)) for m in _RANGE.finditer(decoded) for c in _ASCII_PARTNERS)


def _widened(source: str) -> str | None:
    """`source` with each `\\s` widened to `_WIDE_SPACE` and each `\\S` narrowed to its complement; None for a
    `\\S` inside a class (no such form is needed)."""
    out: list[str] = []
    index = 0
    in_class = False
    opened = -1  # where the current class's members start (a "]" there is a member)
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source):
            escape = source[index + 1]
            if escape == "s":
                out.append(_WIDE_SPACE if in_class else f"[{_WIDE_SPACE}]")
            elif escape == "S":
                if in_class:
                    return None
                out.append(f"[^{_WIDE_SPACE}]")
            else:
                out.append(source[index:index + 2])
            index += 2
            continue
        if in_class:
            if char == "]" and index != opened:
                in_class = False
        elif char == "[":
            in_class = True
            opened = index + 2 if source.startswith("^", index + 1) else index + 1
            out.append(source[index:opened])
            index = opened
            continue
        out.append(char)
        index += 1
    return "".join(out)


@cache  # one twin per pattern: callers tell forms apart by identity
def ascii_twin(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """`pattern` as it runs on ASCII text (see the module docstring), or `pattern` itself when it has no twin."""
    if pattern.flags & re.ASCII:
        return pattern
    source = _widened(pattern.pattern)
    if source is None or _names_a_partner(pattern.pattern):
        return pattern
    return re.compile(source, (pattern.flags & ~re.UNICODE) | re.ASCII)


# Named groups and back-references spell capitals that match nothing.
_GROUP_SYNTAX = re.compile(r"\(\?P<\w+>|\(\?P=\w+\)")


def has_capital(source: str) -> bool:
    """Whether a capital letter of `source` (outside escapes and group names) is matched as itself."""
    source = _GROUP_SYNTAX.sub("", source)
    index = 0
    while index < len(source):
        if source[index] == "\\":
            index += 2  # the escaped character (a hex digit of \\u or \\x after it counts: only ever a refusal more)
            continue
        if "A" <= source[index] <= "Z":
            return True
        index += 1
    return False


@cache
def lowered_twin(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """A case-blind `pattern` as it runs, case-sensitive, on the lower-cased form of an ASCII text: the same spans
    (ASCII case-blind matching compares lower-cased characters, and every letter the pattern names is lower-case),
    found faster. None when the pattern is not case-blind or names a capital."""
    if not pattern.flags & re.IGNORECASE or has_capital(pattern.pattern):
        return None
    twin = pattern if pattern.flags & re.ASCII else ascii_twin(pattern)
    if not twin.flags & re.ASCII:
        return None  # no ASCII twin
    return re.compile(twin.pattern, twin.flags & ~re.IGNORECASE)


def lowered_matches(
    pattern: re.Pattern[str], finder: re.Pattern[str], text: str, lower: str, start: int = 0
) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` on an ASCII text whose `lower()` is `lower`, found by its `lowered_twin` `finder`:
    each match there read again by `pattern` at the same place of `text` (for its groups' letters). `start`: where
    the first match may begin at the earliest (see `lead_bound`)."""
    for found in finder.finditer(lower, start):
        match = pattern.match(text, found.start())
        if match is not None:
            yield match


def held_table(extra: str) -> bytes:
    """A byte table for `lead_bound`: "c" for an ASCII word character, whitespace (as Unicode counts it) or one of
    `extra`, "x" for any other byte."""
    held = {code for code in range(128) if chr(code).isalnum() or chr(code).isspace() or chr(code) in "_" + extra}
    return bytes(ord("c") if code in held else ord("x") for code in range(256))


def lead_bound(lower: str, anchor: re.Pattern[str], table: bytes) -> int:
    """Where the first match of a form can begin at the earliest on an ASCII lower-cased text, or -1 when the form
    matches nowhere: every match holds an `anchor` match (its verb, searched first) and, before it, only characters
    `table` keeps; so none begins before the last other character ahead of the first anchor."""
    found = anchor.search(lower)
    if found is None:
        return -1
    return lower.encode("ascii").translate(table).rfind(b"x", 0, found.start()) + 1
