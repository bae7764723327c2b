"""Which memory providers `memory.provider` may name: the built-in `semantic` and the installed plugins.

Owns `provider_registry`, used alike by the gateway at start and by
`chorus doctor`, so both know the same names. The built-in provider is
registered under its name unless an installed plugin already took it (the
plugin is then what the operator installed on purpose).
"""
from __future__ import annotations

from agent.memory.providers import ProviderRegistry
from agent.memory.semantic import NAME as SEMANTIC
from agent.memory.semantic import semantic_factory
from agent.plugins import PluginErrorSink
from agent.store import SessionStore
from gateway.config import ChorusConfig

BUILTIN_PROVIDERS = (SEMANTIC,)


def provider_registry(
    config: ChorusConfig,
    store: SessionStore,
    *,
    installed: ProviderRegistry | None = None,
    on_error: PluginErrorSink | None = None,
) -> ProviderRegistry:
    """`installed` (default: the entry points) plus the built-in providers, which read `store`."""
    registry = installed if installed is not None else ProviderRegistry.installed()
    if SEMANTIC not in registry.names:
        registry.register(SEMANTIC, semantic_factory(store, config.memory.embeddings, config.model, on_error=on_error))
    return registry


__all__ = ["BUILTIN_PROVIDERS", "provider_registry"]
