"""Message embeddings in the session store: the `VectorIndex` capability, the vector encoding and rank fusion.

Owns what both backends share: `QueryVector` (a model name and its unit
vector), `VectorIndex` (what the `semantic` memory provider asks of a store:
turn the table on, list a chat's messages still without a vector, store
vectors, rank a chat's messages by similarity), the float32 encoding the
SQLite table keeps, and `fuse_ranks`, the reciprocal rank fusion a hybrid
`search` applies. Vectors are stored unit-length, so cosine similarity is a
dot product. Every call is scoped to one chat id, like full-text search.
Knows nothing of embedding endpoints.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar, runtime_checkable

import numpy as np

# Reciprocal rank fusion: score = sum over rankings of 1 / (RRF_K + rank), rank from 1. 60 is the constant
# of Cormack, Clarke & Büttcher (SIGIR 2009); it keeps one ranking's top hit from drowning the other's.
RRF_K: Final = 60
# How deep each ranking goes into the fusion: deeper than any page of results the tool returns.
FUSION_DEPTH: Final = 50
# Only user and assistant text is embedded (tool output and system notices are not what a person recalls).
EMBEDDED_ROLES: Final = ("user", "assistant")
# A chat's newest vectors ranked per query; older ones are left out (the SQLite backend ranks in this process).
MAX_RANKED_VECTORS: Final = 5_000
RECALL_CHARS: Final = 2_000
MAX_EMBED_CHARS: Final = 4_000  # of one message's text sent to be embedded (both backends read this much)


@dataclass(frozen=True, slots=True)
class QueryVector:
    """The embedding of a query by `model` (only vectors of the same model are compared)."""

    model: str
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class PendingText:
    """A message of a chat that has no vector for the current model yet."""

    message_id: int
    text: str


@dataclass(frozen=True, slots=True)
class RecalledMessage:
    message_id: int
    role: str
    created_at: float
    text: str


@runtime_checkable
class VectorIndex(Protocol):
    """A session store that keeps message embeddings beside its messages (both built-in backends)."""

    def enable_vectors(self) -> str:
        """Create the vector table if missing (PostgreSQL: the pgvector extension too); returns how vectors are kept.

        Raises:
            StoreError: the store cannot keep vectors (e.g. the extension may not be created).
        """
        ...

    def pending_texts(self, chat_id: str, model: str, *, limit: int) -> list[PendingText]:
        """The chat's newest user and assistant messages without a `model` vector, newest first."""
        ...

    def add_vectors(self, chat_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
        """Store `(message id, vector)` pairs of messages of `chat_id` (others are ignored); returns how many."""
        ...

    def nearest(self, chat_id: str, query: QueryVector, *, limit: int, past_only: bool = False) -> list[tuple[int, float]]:
        """`(message id, cosine similarity)` of the chat's messages most like `query`, best first.

        `past_only` leaves out what the model sees anyway: the unarchived messages of open sessions.
        """
        ...

    def recalled(self, chat_id: str, message_ids: Sequence[int]) -> list[RecalledMessage]:
        """The messages of `chat_id` among `message_ids` (first `RECALL_CHARS` of each), in the order given."""
        ...


def unit(values: Iterable[float]) -> tuple[float, ...]:
    """`values` scaled to length 1 (a zero vector stays zero)."""
    floats = tuple(float(v) for v in values)
    norm = math.sqrt(math.fsum(v * v for v in floats))
    return floats if norm == 0 else tuple(v / norm for v in floats)


def pack(values: Sequence[float]) -> bytes:
    return array("f", values).tobytes()


T = TypeVar("T")


def in_order(rows: Mapping[int, T], message_ids: Sequence[int]) -> list[T]:
    """The rows of `message_ids` in that order (ids with no row, such as another chat's, are left out)."""
    return [row for row in (rows.get(message_id) for message_id in message_ids) if row is not None]


def best_by_cosine(
    rows: Sequence[tuple[int, bytes]], query: Sequence[float], limit: int
) -> list[tuple[int, float]]:
    """`(id, cosine)` of the packed unit vectors most like `query`, best first; rows come newest first,
    and an equal score keeps that order. Vectors of another length (another model's) are left out."""
    target = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(target))
    if norm > 0:
        target = target / norm
    width = target.size * 4
    kept = [(row_id, blob) for row_id, blob in rows if len(blob) == width]
    if not kept:
        return []
    matrix = np.frombuffer(b"".join(blob for _, blob in kept), dtype=np.float32).reshape(len(kept), target.size)
    scores = matrix @ target
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(kept[int(i)][0], float(scores[int(i)])) for i in order]


def fuse_ranks(rankings: Sequence[Sequence[int]], *, limit: int) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of id rankings (best first each): `(id, fused score)`, best first.

    Ties keep the newer message (the larger id) first, as full-text ranking does.
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking[:FUSION_DEPTH], start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda pair: (pair[1], pair[0]), reverse=True)[:limit]


__all__ = [
    "EMBEDDED_ROLES", "FUSION_DEPTH", "MAX_EMBED_CHARS", "MAX_RANKED_VECTORS", "RECALL_CHARS", "RRF_K", "PendingText", "QueryVector",
    "RecalledMessage", "VectorIndex",
    "best_by_cosine", "fuse_ranks", "in_order", "pack", "unit",
]
