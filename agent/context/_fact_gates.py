"""The cheap gates in front of the value, ticket, path and identifier patterns of `agent.context._facts`.

Owns, for each pattern, the literal it cannot match without (a substring test, or one alternation of several
literals, over the lower-cased text) and the shape it cannot match without (a short scan opening on a rare
character, over the text the pattern reads), and the loop that runs a family of patterns behind their gates.
Exact: a gate only skips a pattern that cannot match. Pure functions, no I/O.
"""
from __future__ import annotations

import re
from typing import TypeAlias

from agent.context._ascii import ascii_twin, lowered_twin
from agent.context._fact_patterns import IDENTIFIER_PATTERNS, PATH_PATTERNS, TICKET_PATTERNS, VALUE_PATTERNS
from agent.context._literals import ascii_literals, literals

# The literal text each pattern cannot match without (any one of these, in lower-cased text): a substring
# test costs a fraction of a scan, and most chat lines lack most of them. A pattern not listed always runs.
_NEEDS_LITERALS: dict[re.Pattern[str], tuple[str, ...]] = {
    VALUE_PATTERNS[1]: ("秒", "分钟", "小时", "天", "个", "元", "块", "兆", "gb", "mb"),
    VALUE_PATTERNS[2]: ("$", "€", "£", "¥"),
    VALUE_PATTERNS[3]: (":",),
    VALUE_PATTERNS[4]: ("am", "pm", "a.m", "p.m"),
    VALUE_PATTERNS[5]: ("-", "/", "月"),
    VALUE_PATTERNS[6]: ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
    VALUE_PATTERNS[7]: ("port", "puerto", "порт", "端口"),
    VALUE_PATTERNS[8]: (":", "."),
    VALUE_PATTERNS[9]: (".",),
    VALUE_PATTERNS[10]: ("version", "versión", "versio", "версия", "版本"),
    VALUE_PATTERNS[11]: ("==", ">=", "<=", "~=", "!="),
    VALUE_PATTERNS[12]: (
        "python", "node", "java", "go", "ruby", "php", "postgres", "mysql", "redis", "ubuntu", "debian", "django",
        "rails", "react", "numpy", "pandas", "kubernetes", "docker", "nginx",
    ),
    TICKET_PATTERNS[0]: ("-",),
    TICKET_PATTERNS[1]: ("#",),
    TICKET_PATTERNS[2]: ("issue", "ticket", "bug", "pr", "pull request", "mr"),
    PATH_PATTERNS[0]: ("/",),
    PATH_PATTERNS[1]: ("/",),
    PATH_PATTERNS[2]: ("/",),
    PATH_PATTERNS[3]: (".",),
    PATH_PATTERNS[4]: (":\\",),
    IDENTIFIER_PATTERNS[0]: ("`",),
    IDENTIFIER_PATTERNS[1]: ("_",),
    IDENTIFIER_PATTERNS[5]: ("-",),
}


# A gate of one literal is a substring test (a fraction of a regex search); several are one alternation.
_NEEDS: dict[re.Pattern[str], str | re.Pattern[str]] = {
    pattern: parts[0] if len(parts) == 1 else literals(parts) for pattern, parts in _NEEDS_LITERALS.items()
}


def _ascii_needs(parts: tuple[str, ...]) -> str | re.Pattern[str] | None:
    """The gate of `parts` over an ASCII lower-cased text: its ASCII parts alone (no other is a substring there),
    one as a substring test; None when there is none (the pattern cannot pass its gate there)."""
    found = tuple(part for part in parts if part.isascii())
    return found[0] if len(found) == 1 else ascii_literals(found)


# `_NEEDS` over an ASCII lower-cased text: most chat lines are ASCII, and the units, port and version literals
# of the other languages need no scan there.
_ASCII_NEEDS: dict[re.Pattern[str], str | re.Pattern[str] | None] = {
    pattern: _ascii_needs(parts) for pattern, parts in _NEEDS_LITERALS.items()
}


# A shape each pattern cannot match without, searched in the text the pattern reads (so case folding and
# masking are the same): each opens on a rare character (a digit, ".", "/", ":", "_", a capital), which the
# regex engine skips to, where the pattern itself opens on a look-behind or a word boundary tried at every
# position. Most digits of a chat line sit inside nicknames ("cbx33"), most dots end sentences.
_EXT = r"(?:py|pyi|js|mjs|ts|tsx|jsx|json|ya?ml|toml|ini|cfg|conf|md|rst|txt|sh|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|" \
    r"sql|env|lock|xml|html|css|scss|csv|log|proto|tf|dockerfile)\b"
_DIGIT_DOT_DIGIT = r"\.\d(?<=\d\.\d)"


def _window(opener: str, run: str, size: int) -> str:
    """A character of `opener` (a class inside `run`) among `size` consecutive characters of `run`: one
    alternative per place of it in the window, all opening on it (which the engine skips to)."""
    places = []
    for ahead in range(size):
        behind = size - ahead  # the run's characters up to the opener, itself included
        places.append((f"(?<={run}{{{behind}}})" if behind > 1 else "") + (f"{run}{{{ahead}}}" if ahead else ""))
    return f"{opener}(?:{'|'.join(places)})"


_SHAPES: dict[re.Pattern[str], re.Pattern[str]] = {
    VALUE_PATTERNS[0]: re.compile(r"\d(?<![\w.]\d)"),  # a number opening a word
    VALUE_PATTERNS[3]: re.compile(r":\d\d"),
    VALUE_PATTERNS[4]: re.compile(r"\d\s?[ap]", re.IGNORECASE),
    VALUE_PATTERNS[5]: re.compile(r"[-/]\d(?<=\d[-/]\d)|月(?<=\d月)"),
    VALUE_PATTERNS[6]: re.compile(r" \d"),
    VALUE_PATTERNS[8]: re.compile(r":\d\d|" + _DIGIT_DOT_DIGIT),
    VALUE_PATTERNS[9]: re.compile(_DIGIT_DOT_DIGIT),
    # The digit after a product name: after its last letter, a "v" or a space.
    VALUE_PATTERNS[12]: re.compile(r"\d(?<=[neaoyplsuxdtrv\s]\d)", re.IGNORECASE),
    TICKET_PATTERNS[0]: re.compile(r"-\d(?<=[A-Z0-9]-\d)"),
    # Two digits after "#", a space or the last letter of "issue", "ticket", "bug", "pr", "pull request", "mr".
    TICKET_PATTERNS[2]: re.compile(r"\d(?<=[egrt\s#]\d)\d", re.IGNORECASE),
    PATH_PATTERNS[0]: re.compile(r"/[\w.@+-]+/"),
    PATH_PATTERNS[1]: re.compile(r"/[\w@+-]+\.\w"),
    PATH_PATTERNS[2]: re.compile(r"/[\w@+-]+\.\w"),
    PATH_PATTERNS[3]: re.compile(r"\.(?<=[\w-]\.)" + _EXT, re.IGNORECASE),
    IDENTIFIER_PATTERNS[1]: re.compile(r"_(?<=[A-Za-z0-9]_)[A-Za-z0-9]"),
    IDENTIFIER_PATTERNS[2]: re.compile(r"[A-Z](?<=[a-z0-9][A-Z])[a-z0-9]"),
    # An ASCII digit in a run of 5 code characters (the code is 5-12 of them), or of 7 hex digits: short runs of
    # digits ("cbx33", "IceDC571") are most of a chat's.
    IDENTIFIER_PATTERNS[3]: re.compile(_window("[0-9]", "[A-Z0-9]", 5)),
    IDENTIFIER_PATTERNS[4]: re.compile(_window("[0-9]", "[0-9a-f]", 7)),
    IDENTIFIER_PATTERNS[5]: re.compile(r"-[0-9a-f]{4}-", re.IGNORECASE),  # a UUID's second group
}


def _opening_on(pattern: re.Pattern[str], lead: str, rewritten: str) -> re.Pattern[str]:
    """`pattern` with its leading look-behind and character class `lead` written as `rewritten`: the class
    first, then the look-behind over it, so the engine skips to the class instead of trying the look-behind at
    every position. The same matches (the look-behind sees the same characters)."""
    if not pattern.pattern.startswith(lead):
        raise ValueError(f"{pattern.pattern!r} does not open with {lead!r}")
    return re.compile(rewritten + pattern.pattern[len(lead):], pattern.flags)


# What `gated_spans` runs in place of a pattern (the same matches, found sooner): "a number opening a word"
# runs on every chat line holding a digit, and most of its digits sit inside nicknames.
_RUN_AS: dict[re.Pattern[str], re.Pattern[str]] = {
    VALUE_PATTERNS[0]: _opening_on(VALUE_PATTERNS[0], r"(?<![\w.])\d+", r"\d(?<![\w.]\d)\d*"),
}


# A pattern with the gates in front of it: the literal it needs in the lower-cased text, or the alternation of
# the literals it needs there, and the shape it needs in the text it reads (each may be None). The literal
# and the alternation are apart so the loop of `gated_spans` tests no types: it runs for every pattern of a clause.
# The last two: whether the pattern and the shape run on the lower-cased text (see `gated`).
Gated: TypeAlias = tuple[re.Pattern[str], str | None, re.Pattern[str] | None, re.Pattern[str] | None, bool, bool]


def gated(patterns: tuple[re.Pattern[str], ...], *, ascii: bool = False) -> tuple[Gated, ...]:
    """Each pattern (or its faster form from `_RUN_AS`) with its gates from `_NEEDS` and `_SHAPES`, looked up once.

    `ascii`: the gates and patterns over an ASCII text (and so an ASCII lower-cased text): the ASCII literals
    (`_ASCII_NEEDS`), without the patterns that cannot pass them, and each pattern, shape and alternation as its
    `ascii_twin`.
    """
    gates: list[Gated] = []
    for pattern in patterns:
        if ascii and pattern in _ASCII_NEEDS:
            needs = _ASCII_NEEDS[pattern]
            if needs is None:
                continue  # none of its literals is ASCII: it cannot match where lower() is ASCII
        else:
            needs = _NEEDS.get(pattern)
        literal = needs if isinstance(needs, str) else None
        alternation = needs if isinstance(needs, re.Pattern) else None
        run, shape = _RUN_AS.get(pattern, pattern), _SHAPES.get(pattern)
        on_lower = shape_on_lower = False
        if ascii:
            # A case-blind pattern or shape runs case-sensitive on the lower-cased text (`lowered_twin`): the same
            # spans, found faster.
            lowered_run, lowered_shape = lowered_twin(run), lowered_twin(shape) if shape is not None else None
            run, on_lower = (lowered_run, True) if lowered_run is not None else (ascii_twin(run), False)
            alternation = ascii_twin(alternation) if alternation is not None else None
            if lowered_shape is not None:
                shape, shape_on_lower = lowered_shape, True
            elif shape is not None:
                shape = ascii_twin(shape)
        gates.append((run, literal, alternation, shape, on_lower, shape_on_lower))
    return tuple(gates)


def gated_spans(text: str, patterns: tuple[Gated, ...], lower: str) -> list[tuple[int, int]]:
    """The spans of `patterns` in `text` (`lower` is `text.lower()`), each pattern behind its gates."""
    found: list[tuple[int, int]] = []
    for pattern, literal, alternation, shape, on_lower, shape_on_lower in patterns:
        if literal is not None and literal not in lower:
            continue
        # The shape opens on a rare character (which the engine skips to), the alternation on letters: shape first.
        if shape is not None and shape.search(lower if shape_on_lower else text) is None:
            continue
        if alternation is not None and alternation.search(lower) is None:
            continue
        for match in pattern.finditer(lower if on_lower else text):  # a loop costs less than a generator
            start, end = match.span()
            if end > start:
                found.append((start, end))
    return found
