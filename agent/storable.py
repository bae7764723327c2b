"""Text as every backend holds it alike: lone surrogates and NUL as U+FFFD.

A model's JSON may carry a lone `\\ud83d` (half an emoji); UTF-8 files, SQLite's
bindings and PostgreSQL cannot hold it, and PostgreSQL's text type holds no
NUL. Notes, skills and the PostgreSQL store write `storable(text)`, so a write
never fails on them and both backends store the same text (what a drift
guard hashes is what was stored). Scanners read the text as it was sent.
"""
from __future__ import annotations

from agent.store.records import valid_utf8


def storable(text: str) -> str:
    """`text` with lone surrogates and NUL as U+FFFD."""
    text = valid_utf8(text)
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


__all__ = ["storable"]
