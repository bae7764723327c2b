"""Key/value statements of a clause: whether to read them, and what they state.

Owns the gates that tell whether a clause may state a value at all (`read_statement`: a shape of a value, or a
noun whose value is arbitrary, then a literal one of the forms needs), the reading of the forms themselves (the
assignment forms of `agent.context._statements`, then the key/value forms of `agent.context._fact_patterns`:
"timeout = 30s", "API port: 8443", "set the timeout to 45 s", "le port est 8080") into a normalised key and
its value, and `normalise`, the case- and whitespace-blind form facts are compared in. Pure functions (one
cache), no I/O; never raises on any text.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TypeAlias

from agent.context._ascii import ascii_twin, held_table, lead_bound, lowered_matches, lowered_twin
from agent.context._fact_gates import gated_spans
from agent.context._fact_patterns import (
    ASCII_KEY_VALUE_FORMS,
    ASSIGN_GATE,
    KEY_VALUE_COPULA,
    KEY_VALUE_FORMS,
    KEY_VALUE_LITERALS,
    KEY_VALUE_PATTERNS,
    LEADING_NUMBER,
    LIST_MARKER,
    PUNCT_STRIP,
    SUBJECT_STOPWORDS,
)
from agent.context._literals import ascii_literals, literals
from agent.context._rule_compiler import Family, family
from agent.context._ruleset import RULESET
from agent.context._statements import (
    FORM_LITERALS,
    VALUE_NOUNS,
    assignment,
    stated_value,
    words_of,
)
from agent.context.fact_rules import FactKind

# Every compression re-reads the previous ledger and overlapping messages: results are cached (values are frozen).
KEY_VALUE_CACHE_SIZE = 16_384

# `read_statement` found no reason to read the forms: whoever needs the statement reads it (`key_value_of`).
UNREAD: tuple[str, str] = ("", "")
KeyValue: TypeAlias = tuple[str, str] | None


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used to compare facts."""
    # Splitting on whitespace and joining with one space is the sub of `\s+` by " " (the same whitespace), whose
    # leading and trailing space the strip removes: the same text, several times faster.
    return " ".join(text.casefold().split()).strip(" .,;:!?。！？")


def read_statement(text: str, lower: str, words: frozenset[str], *, found: bool) -> KeyValue:
    """The key/value statement of a clause (`lower` is `text.lower()`, `words` its `words_of`), None when it has
    none, or `UNREAD` when the gates cannot tell cheaply; `found`: whether a pattern matched in it already."""
    plain = text.isascii()  # over ASCII the twins (`agent.context._ascii`)
    # With nothing found yet, a key/value statement only counts if it adds a match, which takes a value: a
    # number, a quoted or joined token, a code of capitals, or a word after a noun such as "password".
    may_state = found or (
        (_ASCII_MAY_STATE if plain else _MAY_STATE).search(text) is not None
        or (_ASCII_NOUN_WORD if plain else _NOUN_WORD).search(text.casefold()) is not None  # casefold keeps ASCII
    )
    key_value: KeyValue = UNREAD
    if may_state:
        nouns = not VALUE_NOUNS.isdisjoint(words)
        # "=" and a colon are literals of both gates, and most chat lines holding either address someone
        # ("nick: ..."): a substring test (or a scan opening on the colon) answers for the scans of every literal.
        equals = "=" in lower
        # Past the colon test, `_KEY_VALUE_NEEDED` is its trie of literals alone (which opens on one class); and
        # `ASSIGN_GATE` answers as the trie of its literals (over an ASCII clause, of its ASCII ones).
        forms_gate, assign_gate = (_ASCII_FORMS_GATE, _ASCII_ASSIGN_GATE) if plain else (_FORMS_GATE, _ASSIGN_TRIE)
        if not (nouns or equals or _COLON_OPENS.search(lower) is not None or forms_gate.search(lower) is not None):
            key_value = None  # no form can match (a colon in a link opens none): nobody need read them
        elif nouns or equals or ":" in lower or assign_gate.search(lower) is not None:
            key_value = read_key_value(text, lower, words)
    return key_value


# What a stated value holds (see `stated_value`): a digit, a quote, a joined name ("node-b"), a code of capitals.
# As "\d|[`\"«“]|[A-Za-z][-_.][A-Za-z0-9]|[A-Z]{4}", opening on one character class (which the engine skips to).
_MAY_STATE = re.compile(r"[\d`\"«“_.A-Z-](?:(?<=[\d`\"«“])|(?<=[A-Za-z][-_.])[A-Za-z0-9]|(?<=[A-Z])[A-Z]{3})")
# A noun whose value is arbitrary, as a whole word of the casefolded text (how a key's last word is read).
_NOUN_WORD = re.compile(r"(?<!\w)(?:" + "|".join(sorted(map(re.escape, VALUE_NOUNS), key=len, reverse=True)) + r")(?!\w)")
_ASCII_MAY_STATE = ascii_twin(_MAY_STATE)
_ASCII_NOUN_WORD = ascii_twin(_NOUN_WORD)


# What any key/value form (`key_value_of`: the assignment forms, then `KEY_VALUE_PATTERNS`) needs in the lower-cased
# clause, besides a value noun for the no-verb form: a clause without any has no key/value statement. Exact: each
# form is only tried when one of its literals is there, and a colon opens a form only where no "//" follows it
# (":(?!//)" in both colon forms; the other forms that read a colon need a word of their own, listed here).
_KEY_VALUE_NEEDED = re.compile(
    literals(tuple(sorted(part for part in FORM_LITERALS.union(*KEY_VALUE_LITERALS) if part != ":"))).pattern + "|:(?!//)"
)
# Its colon alternative alone, opening on the colon (which the engine skips to).
_COLON_OPENS = re.compile(":(?!//)")
# And the rest: its trie alone opens on one class of first characters (with the colon beside it, on none: three
# times slower), and over an ASCII clause its ASCII literals alone (`ascii_literals`).
_FORM_PARTS = tuple(sorted(part for part in FORM_LITERALS.union(*KEY_VALUE_LITERALS) if part != ":"))
_FORMS_GATE = literals(_FORM_PARTS)
_NEVER = literals(())
_ASCII_FORMS_GATE = ascii_literals(_FORM_PARTS) or _NEVER
# `ASSIGN_GATE`, an alternation of literals, as the trie of the same literals (found where it finds one).
_ASSIGN_PARTS = tuple(ASSIGN_GATE.pattern.split("|"))
_ASSIGN_TRIE = literals(_ASSIGN_PARTS)
_ASCII_ASSIGN_GATE = ascii_literals(_ASSIGN_PARTS) or _NEVER


@lru_cache(maxsize=KEY_VALUE_CACHE_SIZE)
def key_value_of(clause: str) -> tuple[str, str] | None:
    """(normalised key, value) of a key/value statement whose value is a number, path, id, URL or exact token."""
    lower = clause.lower()
    return read_key_value(clause, lower, words_of(lower))


def read_key_value(clause: str, lower: str, words: frozenset[str]) -> tuple[str, str] | None:
    """`key_value_of` with the clause's lower-cased text and words already read (reused when the body is the clause)."""
    body = LIST_MARKER.sub("", clause.strip())
    if body != clause:
        lower = body.lower()
        words = words_of(lower)
    stated = assignment(body, lower, words)
    if stated is not None:
        key = key_words(stated[0])
        if key:
            return key, stated[1]
    plain = body.isascii()
    for pattern, needs in ASCII_KEY_VALUE_FORMS if plain else KEY_VALUE_FORMS:  # ASCII: the twins
        if needs.search(lower) is None:
            continue
        finder = _LOWERED_KEY_VALUE.get(pattern) if plain else None
        if finder is None:
            match = pattern.search(body)
        else:
            start = lead_bound(lower, _COPULA, _COPULA_HELD) if pattern is _ASCII_COPULA_FORM else 0
            match = next(lowered_matches(pattern, finder, body, lower, start), None) if start >= 0 else None
        if match is None:
            continue
        value = match.group("value")
        first = value.split()[0] if value.split() else ""
        if not (LEADING_NUMBER.match(value) or has_value(first) or stated_value(first, match.group("key"))):
            continue
        key = key_words(match.group("key"))
        if key:
            return key, value
    return None


# Ahead of its verb "the X is Y" holds only a determiner and its key (word characters, ".", "-", whitespace): on an
# ASCII clause its matches begin after the last other character ahead of the first verb (`lead_bound`).
_ASCII_COPULA_FORM = ascii_twin(KEY_VALUE_PATTERNS[2])
_COPULA = lowered_twin(KEY_VALUE_COPULA) or re.compile("")
_COPULA_HELD = held_table(".-")
# The case-blind key/value forms ("set X to Y", "the X is Y") found on the lower-cased ASCII clause by their
# case-sensitive twins (`lowered_twin`), by the ASCII twin each runs as.
_LOWERED_KEY_VALUE = {pattern: finder for pattern, _ in ASCII_KEY_VALUE_FORMS if (finder := lowered_twin(pattern)) is not None}


def key_words(raw: str) -> str:
    """The words of a key, normalised, without filler ("the", "our", "please"...)."""
    words = normalise(PUNCT_STRIP.sub(" ", raw)).split()
    return " ".join(w for w in words if w not in SUBJECT_STOPWORDS)


# The rules a value is read by (a number, a path, an id, a URL), each kind behind the gate of its rules.
_VALUE_KINDS: tuple[FactKind, ...] = ("value", "path", "identifier", "url")
_VALUE_FAMILIES: tuple[Family, ...] = tuple(
    family(kind, [c for c in RULESET.compiled if c.kind == kind]) for kind in _VALUE_KINDS
)


def has_value(text: str) -> bool:
    """Whether `text` holds a number, path, id or URL (a value by its shape)."""
    lower = text.lower()
    plain = text.isascii()
    return any(
        f.may_match(text, lower, plain) and gated_spans(text, f.ascii_rules if plain else f.rules, lower)
        for f in _VALUE_FAMILIES
    )
