"""Plugins found through entry points: memory providers and context engines a third party installs.

Owns the two entry-point groups (`chorus.memory_providers`,
`chorus.context_engines`), the list of what is installed in each, and
`load_plugin`, which imports the one the config names. Every failure to load
is a `ConfigError` that names the config key, the bad name and the installed
names, so the gateway refuses to start instead of running without the plugin.
Also owns `PluginErrorSink`, how a plugin failing at run time is reported.
Knows nothing of platforms or the gateway.
"""
from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Final, Literal, TypeAlias

from chorus_errors import ConfigError

MEMORY_PROVIDERS: Final = "chorus.memory_providers"
CONTEXT_ENGINES: Final = "chorus.context_engines"

PluginKind: TypeAlias = Literal["memory_provider", "context_engine"]
PluginErrorSink: TypeAlias = Callable[[str, PluginKind], None]
"""Told `(plugin name, kind)` each time a plugin raises at run time (the gateway counts it)."""


def installed(group: str) -> dict[str, EntryPoint]:
    """The entry points of `group` by name (the first one wins when two distributions use one name)."""
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=group):
        found.setdefault(point.name, point)
    return found


def installed_names(group: str) -> tuple[str, ...]:
    return tuple(sorted(installed(group)))


def load_plugin(group: str, name: str, *, key: str, builtin: tuple[str, ...] = ()) -> object:
    """The object the entry point `name` of `group` points at (imported now).

    Args:
        key: the config key that chose `name` (named in errors).
        builtin: names that are not plugins but are valid for `key` (listed in errors).

    Raises:
        ConfigError: no such entry point, or importing it failed.
    """
    points = installed(group)
    point = points.get(name)
    if point is None:
        known = ", ".join(dict.fromkeys((*builtin, *sorted(points)))) or "none are installed"
        raise ConfigError(
            f"{key}: no plugin named {name!r} in the entry-point group {group}; installed: {known}. "
            f"Install the package that provides it, or set {key} to one of those",
            key=key,
        )
    try:
        return point.load()
    except Exception as exc:
        raise ConfigError(
            f"{key}: the plugin {name!r} ({point.value}) failed to import: {type(exc).__name__}: {exc}",
            key=key,
        ) from exc


__all__ = [
    "CONTEXT_ENGINES", "MEMORY_PROVIDERS", "PluginErrorSink", "PluginKind", "installed", "installed_names",
    "load_plugin",
]
