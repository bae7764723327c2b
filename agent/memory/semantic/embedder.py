"""Embeddings through an OpenAI-compatible `/v1/embeddings` endpoint, in batches, with one deadline per call.

Owns `Embedder` (what the semantic provider needs: texts in, vectors out)
and `OpenAIEmbedder`, the real `openai` client behind it. Every failure
(connection refused, 4xx/5xx, timeout, a reply of the wrong shape) becomes
`EmbeddingFailed`, so callers fall back on one exception type. The key is
never logged or put into an error text.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

import openai

from chorus_errors import ChorusError

BATCH_SIZE: Final = 64  # inputs per request; providers accept 2,048, but a short request fails alone
TIMEOUT_SECONDS: Final = 10.0
MAX_INPUT_CHARS: Final = 4_000  # about 1,000 tokens: far below every embedding model's 8,191


class EmbeddingFailed(ChorusError):
    """The embedding endpoint did not give vectors (down, refused, too slow, or an answer of the wrong shape)."""


class Embedder(Protocol):
    model: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order.

        Raises:
            EmbeddingFailed: the endpoint failed; nothing partial is returned.
        """
        ...

    async def close(self) -> None: ...


class OpenAIEmbedder:
    """`/v1/embeddings` of `base_url` (None: the `openai` client's default endpoint).

    Args:
        model: the embedding model's name.
        api_key: the key, or None for endpoints that need none.
        timeout: seconds one request may take; there are no retries (the caller falls back instead).
    """

    def __init__(self, *, model: str, base_url: str | None, api_key: str | None, timeout: float = TIMEOUT_SECONDS) -> None:
        self.model = model
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "unset", max_retries=0, timeout=timeout)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            batch = [text[:MAX_INPUT_CHARS] or " " for text in texts[start : start + BATCH_SIZE]]
            vectors.extend(await self._batch(batch))
        return vectors

    async def _batch(self, batch: list[str]) -> list[list[float]]:
        try:
            # "float": every OpenAI-compatible server speaks it; base64 (the client's default) is not universal.
            reply = await self._client.embeddings.create(model=self.model, input=batch, encoding_format="float")
        except openai.APIStatusError as exc:
            raise EmbeddingFailed(f"the embedding endpoint answered HTTP {exc.status_code}") from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingFailed("the embedding endpoint did not answer in time") from exc
        except openai.APIError as exc:
            raise EmbeddingFailed(f"the embedding endpoint failed: {type(exc).__name__}") from exc
        rows = sorted(reply.data, key=lambda row: row.index)
        if len(rows) != len(batch) or any(not row.embedding for row in rows):
            raise EmbeddingFailed(f"the embedding endpoint gave {len(rows)} vectors for {len(batch)} texts")
        return [list(row.embedding) for row in rows]

    async def close(self) -> None:
        await self._client.close()
