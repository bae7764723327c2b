"""The built-in `semantic` memory provider: recall by meaning through `/v1/embeddings` (see `provider.py`).

`semantic_factory` is how the gateway registers it beside the entry-point
plugins: `memory.provider: semantic` picks it; `memory.embeddings` names the
endpoint, its null fields falling back to the chat model's `base_url` and
`api_key`. Building it does no I/O (the doctor builds it too).
"""
from __future__ import annotations

from agent.memory.providers import MemoryProvider, ProviderFactory
from agent.memory.semantic.embedder import Embedder, EmbeddingFailed, OpenAIEmbedder
from agent.memory.semantic.provider import NAME, RECALL_LABEL, SemanticMemory
from agent.plugins import PluginErrorSink
from agent.settings import EmbeddingsSettings, ModelSettings
from agent.store import SessionStore


def embedder_for(embeddings: EmbeddingsSettings, model: ModelSettings) -> OpenAIEmbedder:
    """The endpoint `memory.embeddings` names; a null `base_url` or `api_key` is the chat model's."""
    key = embeddings.api_key or model.api_key
    return OpenAIEmbedder(
        model=embeddings.model,
        base_url=embeddings.base_url or model.base_url,
        api_key=key.get_secret_value() if key is not None else None,
    )


def semantic_factory(
    store: SessionStore, embeddings: EmbeddingsSettings, model: ModelSettings, *, on_error: PluginErrorSink | None = None
) -> ProviderFactory:
    def build() -> MemoryProvider:
        return SemanticMemory(store, embedder_for(embeddings, model), on_error=on_error)

    return build


__all__ = [
    "NAME", "RECALL_LABEL", "Embedder", "EmbeddingFailed", "OpenAIEmbedder", "SemanticMemory", "embedder_for",
    "semantic_factory",
]
