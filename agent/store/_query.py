"""Turning untrusted search text into a safe FTS5 query pinned to one chat.

Owns the chat tag (one opaque FTS token per chat) and query sanitising. User
text never reaches FTS5 syntax: only word characters survive, each word
becomes a quoted string, and the whole expression is ANDed with the chat tag
column filter, so operators (`OR`, `NOT`, `NEAR`, `*`, `^`, `col:`, quotes,
parentheses) in the input are plain words at most and cannot widen the scope.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

MAX_QUERY_TERMS = 12
MAX_TERM_CHARS = 64
_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=4096)  # every append asks for it: a busy gateway's chats hash once each
def chat_tag(chat_id: str) -> str:
    """The FTS token that marks every message of `chat_id` (letters and digits only)."""
    return "c" + hashlib.sha256(chat_id.encode("utf-8")).hexdigest()[:24]


def query_terms(text: str) -> list[str]:
    """The distinct words of `text`, in order, capped in number and length."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group(0)[:MAX_TERM_CHARS]
        # "_" is a word character for the regex but a separator for the tokenizer; split so
        # the quoted term is a phrase of real tokens rather than one that can never match.
        for piece in word.split("_"):
            if piece and piece.lower() not in seen:
                seen[piece.lower()] = None
    return list(seen)[:MAX_QUERY_TERMS]


def fts_expression(chat_id: str, terms: list[str], *, any_term: bool) -> str:
    """An FTS5 MATCH expression: chat tag AND (all terms | any term) in the text column."""
    joiner = " OR " if any_term else " "
    quoted = joiner.join('"' + term.replace('"', '""') + '"' for term in terms)
    return f'chat_tag : "{chat_tag(chat_id)}" AND text : ({quoted})'
