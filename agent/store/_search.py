"""Full-text search over one chat's messages: ranked hits with snippets and surrounding messages.

Owns the search SQL and the ranking. Scope is enforced twice: every FTS
expression is pinned to the chat tag, and every joined row must carry the same
`chat_id`.

Ranking is BM25 computed over the chat, not the whole store. FTS5's own
`bm25()` derives each word's weight by scanning that word's postings across
every chat, which costs tens of milliseconds on a million-message store and
lets other chats' vocabulary skew this chat's ranking. Here each query word
fetches the chat's most recent matches (an index seek, no scan), its weight
comes from how often it occurs in this chat, and length normalisation uses the
stored message length. Occurrence counts within a message are not used
(presence only), which keeps ranking free of reading message text.

Hybrid search: given the chat's messages ranked by vector similarity
(`nearest`, from `agent.store.vectors`), the full-text ranking and that one are
fused by reciprocal rank (`fuse_ranks`); a message found only by meaning gets
the start of its text as its snippet.
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from agent.store._query import fts_expression, query_terms
from agent.store.records import ContextLine, SearchHit
from agent.store.vectors import fuse_ranks

MAX_SEARCH_LIMIT = 20
MAX_CONTEXT = 5
CONTEXT_CHARS = 300
SNIPPET_TOKENS = 24
# Per query word, the newest matches considered; beyond this a word is common in the chat
# and its weight is near zero anyway.
CANDIDATES_PER_TERM = 200
BM25_K1, BM25_B = 1.2, 0.75
HIT_OPEN, HIT_CLOSE, ELLIPSIS = "**", "**", "…"

_CANDIDATES_SQL = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
_SNIPPET_SQL = f"""
SELECT rowid, snippet(messages_fts, 0, '{HIT_OPEN}', '{HIT_CLOSE}', '{ELLIPSIS}', {SNIPPET_TOKENS})
FROM messages_fts WHERE messages_fts MATCH ? AND rowid IN ({{marks}})
"""
# The messages of one archive generation hold consecutive sequence numbers (each in-place
# replacement archives the whole active range and appends after it), so neighbours are a range.
_CONTEXT_SQL = f"""
SELECT seq, role, substr(text, 1, {CONTEXT_CHARS * 4}) AS text FROM messages
WHERE session_id = ? AND archived = ? AND seq BETWEEN ? AND ? AND seq != ? ORDER BY seq
"""
_LENGTHS_SQL = "SELECT id, text_chars FROM messages WHERE id IN ({marks}) AND chat_id = ?"
_ROWS_SQL = """
SELECT id, session_id, seq, role, created_at, archived, substr(text, 1, {chars}) AS lead
FROM messages WHERE id IN ({marks}) AND chat_id = ?
"""
_SQL_PARAMS_PER_QUERY = 500


@dataclass(frozen=True, slots=True)
class _Candidate:
    row_id: int
    matched: int
    score: float


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= CONTEXT_CHARS else flat[: CONTEXT_CHARS - 1] + ELLIPSIS


def _context(conn: sqlite3.Connection, row: sqlite3.Row, count: int) -> tuple[tuple[ContextLine, ...], tuple[ContextLine, ...]]:
    if count == 0:
        return (), ()
    seq = row["seq"]
    rows = conn.execute(_CONTEXT_SQL, (row["session_id"], row["archived"], seq - count, seq + count, seq)).fetchall()
    lines = [ContextLine(seq=r["seq"], role=r["role"], text=_shorten(r["text"])) for r in rows]
    return tuple(line for line in lines if line.seq < seq), tuple(line for line in lines if line.seq > seq)


def _lengths(conn: sqlite3.Connection, chat_id: str, row_ids: Sequence[int]) -> dict[int, int]:
    """Lengths of the candidate rows that really belong to `chat_id`, by id."""
    found: dict[int, int] = {}
    for start in range(0, len(row_ids), _SQL_PARAMS_PER_QUERY):
        chunk = row_ids[start : start + _SQL_PARAMS_PER_QUERY]
        sql = _LENGTHS_SQL.format(marks=",".join("?" * len(chunk)))
        found.update(conn.execute(sql, (*chunk, chat_id)).fetchall())
    return found


def _rank(conn: sqlite3.Connection, chat_id: str, terms: list[str]) -> list[_Candidate]:
    matched_terms: dict[int, list[int]] = {}
    frequencies: list[int] = []
    for index, term in enumerate(terms):
        expression = fts_expression(chat_id, [term], any_term=False)
        row_ids = [row_id for (row_id,) in conn.execute(_CANDIDATES_SQL, (expression, CANDIDATES_PER_TERM))]
        frequencies.append(len(row_ids))
        for row_id in row_ids:
            matched_terms.setdefault(row_id, []).append(index)
    if len(terms) > 1 and max(frequencies) >= CANDIDATES_PER_TERM:
        # A common word hides older messages past its cap; messages with every word still count.
        expression = fts_expression(chat_id, terms, any_term=False)
        for (row_id,) in conn.execute(_CANDIDATES_SQL, (expression, CANDIDATES_PER_TERM)):
            matched_terms[row_id] = list(range(len(terms)))
    if not matched_terms:
        return []
    stats = conn.execute("SELECT messages, chars FROM chat_stats WHERE chat_id = ?", (chat_id,)).fetchone()
    total_messages, total_chars = (stats[0], stats[1]) if stats else (len(matched_terms), 1)
    average = max(1.0, total_chars / max(1, total_messages))
    weights = [
        math.log((total_messages - freq + 0.5) / (freq + 0.5) + 1.0) for freq in frequencies
    ]
    lengths = _lengths(conn, chat_id, list(matched_terms))
    candidates = []
    for row_id, indexes in matched_terms.items():
        length = lengths.get(row_id)
        if length is None:
            continue
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
        score = sum(weights[i] * (BM25_K1 + 1) / (1 + norm) for i in indexes)
        candidates.append(_Candidate(row_id, len(indexes), score))
    # Messages with more of the words first, then BM25, then the newer message.
    candidates.sort(key=lambda c: (c.matched, c.score, c.row_id), reverse=True)
    return candidates


def _ordered(
    conn: sqlite3.Connection, chat_id: str, terms: list[str], nearest: Sequence[int], limit: int
) -> list[tuple[int, float]]:
    """`(message id, score)` best first: full-text alone, or fused with the vector ranking when there is one."""
    ranked = _rank(conn, chat_id, terms) if terms else []
    if not nearest:
        return [(c.row_id, c.score) for c in ranked[:limit]]
    return fuse_ranks([[c.row_id for c in ranked], nearest], limit=limit)


def search_chat(
    conn: sqlite3.Connection, chat_id: str, query: str, *, limit: int, context: int, nearest: Sequence[int] = ()
) -> list[SearchHit]:
    """Messages of `chat_id` matching any word of `query` (or near it in meaning), best first (see the module docstring)."""
    terms = query_terms(query)
    if not terms and not nearest:
        return []
    limit = max(1, min(limit, MAX_SEARCH_LIMIT))
    context = max(0, min(context, MAX_CONTEXT))
    best = _ordered(conn, chat_id, terms, nearest, limit)
    if not best:
        return []
    marks = ",".join("?" * len(best))
    ids = [row_id for row_id, _ in best]
    sql = _ROWS_SQL.format(marks=marks, chars=CONTEXT_CHARS * 4)
    rows = {row["id"]: row for row in conn.execute(sql, (*ids, chat_id))}
    snippets = dict(conn.execute(
        _SNIPPET_SQL.format(marks=marks), (fts_expression(chat_id, terms, any_term=True), *ids)
    ).fetchall()) if terms else {}
    hits = []
    for row_id, score in best:
        row = rows.get(row_id)
        if row is None:
            continue  # a vector of a message that is gone, or of another chat: never shown
        before, after = _context(conn, row, context)
        snippet = snippets.get(row_id)
        hits.append(
            SearchHit(
                session_id=row["session_id"],
                seq=row["seq"],
                role=row["role"],
                snippet=" ".join(str(snippet).split()) if snippet else _shorten(row["lead"]),
                created_at=row["created_at"],
                archived=bool(row["archived"]),
                score=score,
                before=before,
                after=after,
            )
        )
    return hits
