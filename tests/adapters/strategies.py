"""Hypothesis strategies for hostile platform text: lone surrogates, controls, NUL, and everything else."""
from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

# Every code point, surrogates included (`categories=None` with `codec=None` leaves none out).
ANY_CHAR = st.characters(codec=None)
HOSTILE_PIECE = st.one_of(
    st.characters(codec=None, categories=("Cs", "Cc", "Zl", "Zp", "Cf")),  # surrogates, controls, separators
    st.sampled_from(["\x00", "\ud83d", "\ude00", "\ud83d\ude00", "\u2028", "\x1b[31m", "\r\n", "/start"]),
    ANY_CHAR,
)
hostile_text = st.lists(HOSTILE_PIECE, max_size=60).map("".join)


def utf8_valid(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def strings_of(value: Any) -> list[str]:
    """Every string field of a (nested) dataclass value."""
    found: list[str] = []
    for spec in dataclasses.fields(value):
        field = getattr(value, spec.name)
        if isinstance(field, str):
            found.append(field)
        elif isinstance(field, tuple):
            for item in field:
                found.extend(strings_of(item))
    return found


def nested_json(depth: int) -> str:
    """A JSON text nested `depth` arrays deep (Python's parser gives up far sooner than 100,000)."""
    return "[" * depth + "]" * depth
