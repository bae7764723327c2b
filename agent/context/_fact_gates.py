"""The loop that runs a family of fact rules behind their gates (derived by `agent.context._rule_compiler`).

Exact: a gate only skips a pattern that cannot match. Pure functions, no I/O.
"""
from __future__ import annotations

from agent.context._rule_compiler import Gated


def gated_spans(text: str, patterns: tuple[Gated, ...], lower: str) -> list[tuple[int, int]]:
    """The spans of `patterns` in `text` (`lower` is `text.lower()`), each pattern behind its gates."""
    found: list[tuple[int, int]] = []
    for pattern, literal, alternation, capital, on_lower in patterns:
        if literal is not None and literal not in lower:
            continue
        if capital and text == lower:
            continue  # no character lower() changes: no capital
        if alternation is not None and alternation.search(lower) is None:
            continue
        for match in pattern.finditer(lower if on_lower else text):  # a loop costs less than a generator
            start, end = match.span()
            if end > start:
                found.append((start, end))
    return found
