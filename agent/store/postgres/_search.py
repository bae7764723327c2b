"""Full-text search over one chat in PostgreSQL: the same ranking, snippets and context as the SQLite store.

Scope is enforced twice, as in `agent.store._search`: every `tsquery` ANDs
the chat tag, and every row read must carry the asking chat's `chat_id`.
Query text becomes words through `query_terms` (so operators, quotes and SQL
are plain words at most) and reaches PostgreSQL only as a bound parameter of
`plainto_tsquery`, which reads no query syntax at all. Ranking is the
chat-local BM25 over presence of the SQLite store: per word the chat's newest
matches (one GIN lookup each, all words in one round trip), weights from the
chat's own totals. Given the chat's messages ranked by vector similarity
(`nearest`), the two rankings are fused by reciprocal rank (`fuse_ranks`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import psycopg

from agent.store._query import chat_tag, query_terms
from agent.store._search import (
    BM25_B,
    BM25_K1,
    CANDIDATES_PER_TERM,
    CONTEXT_CHARS,
    MAX_CONTEXT,
    MAX_SEARCH_LIMIT,
)
from agent.store.postgres._text import folded_terms, snippet
from agent.store.records import ContextLine, SearchHit
from agent.store.vectors import fuse_ranks

EXCERPT_CHARS = 4_000
EXCERPT_LEAD_CHARS = 400

# Per word: the chat's newest messages holding it, with their length (one statement for all words).
_CANDIDATES_SQL = """
SELECT t.i AS term, m.id, m.text_chars,
       (SELECT messages FROM chat_stats WHERE chat_id = %(chat)s) AS chat_messages,
       (SELECT chars FROM chat_stats WHERE chat_id = %(chat)s) AS chat_chars
FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(word, i)
CROSS JOIN LATERAL (
    SELECT id, text_chars FROM messages
    WHERE tsv @@ plainto_tsquery('simple', t.word || ' ' || %(tag)s) AND chat_id = %(chat)s
      AND numnode(plainto_tsquery('simple', t.word)) > 0  -- a word the parser drops must not match the whole chat
    ORDER BY id DESC LIMIT %(cap)s
) AS m
"""
_ALL_WORDS_SQL = """
SELECT id, text_chars FROM messages
WHERE tsv @@ plainto_tsquery('simple', %(words)s) AND chat_id = %(chat)s ORDER BY id DESC LIMIT %(cap)s
"""
# Each hit with its excerpt and its neighbours, in one statement. The excerpt is EXCERPT_CHARS around
# the first place one of the words occurs (case-insensitive; a diacritic-folded hit that strpos
# cannot see falls back to the start), never the whole of a huge message. A generation's messages
# hold consecutive seqs (each in-place replacement archives the whole active range), so the
# neighbours are a seq range within the hit's session and generation.
_HITS_SQL = f"""
SELECT hit.id, hit.session_id, hit.seq, hit.role, hit.created_at, hit.archived, hit.text_chars, hit.start,
       substr(hit.text, hit.start, {EXCERPT_CHARS}) AS excerpt,
       (SELECT coalesce(json_agg(json_build_array(n.seq, n.role, substr(n.text, 1, {CONTEXT_CHARS * 4}))
                                 ORDER BY n.seq), '[]')
        FROM messages n
        WHERE n.session_id = hit.session_id AND n.archived = hit.archived
          AND n.seq BETWEEN hit.seq - %(context)s AND hit.seq + %(context)s AND n.seq != hit.seq) AS around
FROM (
    SELECT m.*, greatest(1, coalesce(
        (SELECT min(nullif(strpos(lower(m.text), w), 0)) FROM unnest(%(words)s::text[]) AS w), 1
    ) - {EXCERPT_LEAD_CHARS}) AS start
    FROM messages m WHERE id = ANY(%(ids)s) AND chat_id = %(chat)s
) AS hit
"""

Conn = psycopg.Connection[dict[str, Any]]


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= CONTEXT_CHARS else flat[: CONTEXT_CHARS - 1] + "…"


def _rank(conn: Conn, chat_id: str, terms: list[str]) -> list[tuple[int, int, float]]:
    """(message id, words matched, score) of the chat's candidates, best first."""
    tag = chat_tag(chat_id)
    matched: dict[int, list[int]] = {}
    lengths: dict[int, int] = {}
    frequencies = [0] * len(terms)
    rows = conn.execute(
        _CANDIDATES_SQL, {"terms": terms, "tag": tag, "chat": chat_id, "cap": CANDIDATES_PER_TERM}
    ).fetchall()
    for row in rows:
        index = int(row["term"]) - 1
        frequencies[index] += 1
        matched.setdefault(row["id"], []).append(index)
        lengths[row["id"]] = row["text_chars"]
    if len(terms) > 1 and max(frequencies) >= CANDIDATES_PER_TERM:
        # A common word hides older messages past its cap; messages with every word still count.
        words = " ".join([*terms, tag])
        for row in conn.execute(_ALL_WORDS_SQL, {"words": words, "chat": chat_id, "cap": CANDIDATES_PER_TERM}):
            matched[row["id"]] = list(range(len(terms)))
            lengths[row["id"]] = row["text_chars"]
    if not matched:
        return []
    stats = rows[0] if rows and rows[0]["chat_messages"] is not None else None
    total_messages, total_chars = (stats["chat_messages"], stats["chat_chars"]) if stats else (len(matched), 1)
    average = max(1.0, total_chars / max(1, total_messages))
    weights = [math.log((total_messages - freq + 0.5) / (freq + 0.5) + 1.0) for freq in frequencies]
    ranked = []
    for row_id, indexes in matched.items():
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[row_id] / average)
        ranked.append((row_id, len(indexes), sum(weights[i] * (BM25_K1 + 1) / (1 + norm) for i in indexes)))
    # Messages with more of the words first, then BM25, then the newer message.
    ranked.sort(key=lambda c: (c[1], c[2], c[0]), reverse=True)
    return ranked


def _around(row: dict[str, Any]) -> tuple[tuple[ContextLine, ...], tuple[ContextLine, ...]]:
    lines = [ContextLine(seq=seq, role=role, text=_shorten(text)) for seq, role, text in row["around"]]
    return tuple(x for x in lines if x.seq < row["seq"]), tuple(x for x in lines if x.seq > row["seq"])


def _snippet_of(row: dict[str, Any], terms: list[str]) -> str:
    start, excerpt = int(row["start"]), str(row["excerpt"])
    cut_after = start - 1 + len(excerpt) < int(row["text_chars"])
    return " ".join(snippet(excerpt, terms, cut_before=start > 1, cut_after=cut_after).split())


def search_chat(
    conn: Conn, chat_id: str, query: str, *, limit: int, context: int, nearest: Sequence[int] = ()
) -> list[SearchHit]:
    """Messages of `chat_id` matching any word of `query` (or near it in meaning), best first (see the module docstring)."""
    terms = folded_terms(query_terms(query))
    if not terms and not nearest:
        return []
    limit = max(1, min(limit, MAX_SEARCH_LIMIT))
    context = max(0, min(context, MAX_CONTEXT))
    ranked = _rank(conn, chat_id, terms) if terms else []
    best = (
        fuse_ranks([[c[0] for c in ranked], nearest], limit=limit) if nearest else [(c[0], c[2]) for c in ranked[:limit]]
    )
    if not best:
        return []
    params = {"words": terms, "ids": [row_id for row_id, _ in best], "chat": chat_id, "context": context}
    rows = {row["id"]: row for row in conn.execute(_HITS_SQL, params)}
    hits = []
    for row_id, score in best:
        row = rows.get(row_id)
        if row is None:
            continue  # a vector of a message that is gone, or of another chat: never shown
        before, after = _around(row)
        hits.append(SearchHit(
            session_id=row["session_id"], seq=row["seq"], role=row["role"],
            snippet=_snippet_of(row, terms), created_at=row["created_at"],
            archived=bool(row["archived"]), score=score, before=before, after=after,
        ))
    return hits
