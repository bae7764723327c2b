"""The doctor's plugin rows: what is installed in each entry-point group, what the config chose, and whether it loads.

`check_plugins` gives one row for `context.engine` and one for
`memory.provider`. A chosen plugin is loaded and built exactly as the gateway
does at start (no network: building a plugin does no I/O by contract), so a
name that is not installed, or a plugin that fails to import or to build, is
a failed row naming the installed ones.
"""
from __future__ import annotations

from agent.context.factory import BUILTIN_ENGINE, engine_names
from agent.memory.providers import CONFIG_KEY as PROVIDER_KEY
from agent.memory.providers import ProviderRegistry
from agent.store import store_for
from chorus_errors import ConfigError
from gateway.build import check_engine
from gateway.config import ChorusConfig
from gateway.doctor.checks import Check
from gateway.memory_providers import BUILTIN_PROVIDERS, provider_registry

ENGINE_KEY = "context.engine"


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(names) if names else "none"


def check_context_engine(config: ChorusConfig) -> Check:
    name = config.context.engine
    installed = f"installed: {_listed(engine_names())}"
    try:
        check_engine(config)
    except ConfigError as exc:
        return Check(ENGINE_KEY, False, str(exc), f"set {ENGINE_KEY} to an installed engine ({installed})")
    kind = "built in" if name == BUILTIN_ENGINE else "plugin, loaded"
    return Check(ENGINE_KEY, True, f"using {name} ({kind}); {installed}")


async def check_memory_provider(config: ChorusConfig, registry: ProviderRegistry | None = None) -> Check:
    name = config.memory.provider
    if registry is None:
        registry = provider_registry(config, store_for(config.store.url, config.home_dir))
    installed = f"installed: {_listed(registry.names)}"
    if not name:
        return Check(PROVIDER_KEY, True, f"none chosen (notes only); {installed}")
    try:
        provider = registry.create(name)
    except ConfigError as exc:
        return Check(PROVIDER_KEY, False, str(exc), f"set {PROVIDER_KEY} to an installed provider or \"\"")
    await provider.shutdown()
    kind = "built in" if name in BUILTIN_PROVIDERS else "plugin, loaded"
    return Check(PROVIDER_KEY, True, f"using {name} ({kind}); {installed}")


async def check_plugins(config: ChorusConfig) -> list[Check]:
    """The context engine row, then the memory provider row."""
    return [check_context_engine(config), await check_memory_provider(config)]


__all__ = ["check_context_engine", "check_memory_provider", "check_plugins"]
