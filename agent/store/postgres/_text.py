"""Text folding for PostgreSQL full-text search, and hit snippets like the SQLite store's.

The `simple` configuration lowercases but keeps diacritics, and its parser
reads URLs, paths and e-mail addresses as single tokens, while the SQLite
store's tokenizer splits on every non-word character and folds "Café" to
"cafe". So both sides of a match are folded here, the same way: words are
the `\\w+` runs that `agent.store._query.query_terms` uses for the query,
NFKD-decomposed with combining marks dropped, then handed to `to_tsvector`
and `plainto_tsquery` with `simple`. The chat tag is one more word of every
vector, so a search is pinned to its chat inside the index.
"""
from __future__ import annotations

import re
import unicodedata

from agent.store._query import chat_tag
from agent.store._search import ELLIPSIS, HIT_CLOSE, HIT_OPEN, SNIPPET_TOKENS

# PostgreSQL refuses lexemes over 2 KB; a longer "word" (a hash, base64) is cut, never matched whole anyway.
MAX_INDEXED_WORD_CHARS = 200
# A vector's words and their positions may take 1 MiB - 1 bytes (the whole statement fails past it): each
# distinct word costs its UTF-8 bytes, a pad byte at most and 4 bytes for its one position. The margin is
# the chat tag's and the parser's (it reads a few runs, like "2x", as two tokens).
MAX_INDEXED_BYTES = 960_000
_WORD_OVERHEAD_BYTES = 5
_WORD = re.compile(r"\w+", re.UNICODE)


def fold(word: str) -> str:
    """`word` lowercased, compatibility-normalised, without diacritics ("ＣＡＦÉ" -> "cafe")."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _words(text: str) -> list[str]:
    out: list[str] = []
    for match in _WORD.finditer(text):
        # "_" is a word character for the regex but a separator for search (as in `query_terms`).
        out.extend(piece for piece in match.group(0).split("_") if piece)
    return out


def index_text(text: str, chat_id: str) -> str:
    """The folded, de-duplicated words of `text` plus the chat tag, for `to_tsvector('simple', …)`.

    Presence is all the ranking uses, so each word appears once. A vector holds at most 1 MiB of distinct
    words and PostgreSQL refuses the whole statement past that (a batch of appends, an import): a text of
    more distinct words than `MAX_INDEXED_BYTES` (a base64 blob, a minified bundle, a megabyte of hashes)
    is indexed by its first ones, and stored whole.
    """
    seen: dict[str, None] = {}
    room = MAX_INDEXED_BYTES
    for word in _words(text):
        folded = _fold_fast(word)[:MAX_INDEXED_WORD_CHARS]
        if folded and folded not in seen:
            room -= _WORD_OVERHEAD_BYTES + (len(folded) if folded.isascii() else len(folded.encode("utf-8")))
            if room < 0:
                break
            seen[folded] = None
    return " ".join([*seen, chat_tag(chat_id)])


def folded_terms(terms: list[str]) -> list[str]:
    """Query terms folded like indexed words, de-duplicated, order kept."""
    seen: dict[str, None] = {}
    for term in terms:
        folded = fold(term)
        if folded:
            seen.setdefault(folded, None)
    return list(seen)


def snippet(text: str, terms: list[str], *, cut_before: bool = False, cut_after: bool = False) -> str:
    """Up to `SNIPPET_TOKENS` words of `text` around the first hit, each hit wrapped in `**`.

    `text` may be an excerpt of a longer message (`cut_before`/`cut_after`):
    the words at a cut may be partial, so they are left out and an ellipsis
    marks the cut. Words are folded only up to the window, so a long message
    costs little when the hit is early (the excerpt is chosen around it).
    """
    wanted = set(terms)
    spans = [m.span() for m in _WORD.finditer(text)]
    if cut_before and spans:
        spans = spans[1:]
    if cut_after and spans:
        spans = spans[:-1]
    if not spans:
        return ""
    first = next((i for i, (a, b) in enumerate(spans) if _matches(text[a:b], wanted)), 0)
    begin = max(0, min(first - SNIPPET_TOKENS // 4, len(spans) - SNIPPET_TOKENS))
    finish = min(len(spans), begin + SNIPPET_TOKENS)
    pieces = []
    cursor = spans[begin][0] if begin or cut_before else 0
    for start, end in spans[begin:finish]:
        pieces.append(text[cursor:start])
        word = text[start:end]
        pieces.append(f"{HIT_OPEN}{word}{HIT_CLOSE}" if _matches(word, wanted) else word)
        cursor = end
    whole_end = finish == len(spans) and not cut_after
    out = "".join(pieces) + (text[cursor:] if whole_end else "")
    return (ELLIPSIS if begin or cut_before else "") + out + ("" if whole_end else ELLIPSIS)


def _fold_fast(word: str) -> str:
    """`fold(word)`; ASCII words (most of them) need only lowercasing."""
    return word.lower() if word.isascii() else fold(word)


def _matches(word: str, wanted: set[str]) -> bool:
    return any(_fold_fast(piece) in wanted for piece in word.split("_") if piece)
