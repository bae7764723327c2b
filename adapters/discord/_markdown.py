"""The model's Markdown as Discord renders it: Discord reads Markdown itself, except fences it cannot nest.

Owns `to_discord`. Prose is passed through as written. Discord knows only
three-backtick fences and ends a block at the first ``` inside it, so every
fenced block (any length, backticks or tildes: `adapters/fences.py`) is
rewritten as a three-backtick block whose body has a zero-width space between
adjacent backticks: the code is shown verbatim, and an inner fence no longer
ends the block. Pure; knows nothing of sending.
"""
from __future__ import annotations

from adapters.fences import blocks, break_backtick_runs


def to_discord(text: str) -> str:
    """`text` with its fenced code blocks in the one form Discord renders whole."""
    parts = blocks(text)
    if all(block.fence is None for block in parts):
        return text
    out: list[str] = []
    for block in parts:
        if block.fence is None:
            out.append(block.text)
        else:
            out.append(f"```{block.fence.language}\n{break_backtick_runs(block.text)}\n```")
    return "\n".join(out)


__all__ = ["to_discord"]
