"""Every configuration key as the dashboard's editor shows it (`GET /api/config/schema`).

Owns `config_schema` (one entry per leaf of `ChorusConfig`: dotted key, type, choices, description,
default, current value, secret flag, and whether a change applies at once or after a restart),
`applies` (the one place that says which) and `is_secret`. Descriptions are the models' own
`Field(description=…)`, so the file's schema and the editor never disagree. A secret's value is never
returned, only whether it is set; a URL's password is replaced by `***`. Knows nothing of HTTP.
"""
from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from gateway.config import ChorusConfig, public_url
from gateway.ops.live_config import restart_needed, shown

Applies = Literal["live", "restart"]
# Keys whose values may carry credentials although typed as plain text: masked like secrets.
SECRET_KEYS = frozenset({"mcp.servers"})  # env and headers of MCP servers (API keys, Authorization)
URL_KEYS = frozenset({"redis.url", "store.url"})  # shown with any password as ***
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "bool"), (int, "int"), (float, "float"), (str, "string"), (Path, "path"), (SecretStr, "secret"),
)


def applies(key: str) -> Applies:
    """"live": a change applies from the next message on every replica; "restart": only after a restart.

    The one place the editor asks; `gateway/ops/live_config.py` `RESTART_KEYS` decides.
    """
    return "restart" if restart_needed(key) else "live"


def _unwrapped(annotation: Any) -> tuple[Any, bool]:
    """The annotation without `Annotated[...]` and `| None`, and whether None is allowed."""
    nullable = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            nullable = nullable or len(args) < len(typing.get_args(annotation))
            annotation = args[0] if len(args) == 1 else annotation
            if len(args) != 1:
                return annotation, nullable
        else:
            return annotation, nullable


def _mentions_secret(annotation: Any) -> bool:
    if annotation is SecretStr:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return any(_mentions_secret(f.annotation) for f in annotation.model_fields.values())
    return any(_mentions_secret(arg) for arg in typing.get_args(annotation))


def _type_of(annotation: Any) -> tuple[str, list[object]]:
    """A short type name for the editor and, for a choice, its values."""
    core, _nullable = _unwrapped(annotation)
    origin = typing.get_origin(core)
    if origin is Literal:
        return "choice", list(typing.get_args(core))
    if origin in (list, tuple):
        return "list", []
    if origin is dict:
        return "mapping", []
    for python_type, name in _TYPE_NAMES:
        if core is python_type:
            return name, []
    return "value", []


def _leaves(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, FieldInfo, object]]:
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        key = f"{prefix}{info.alias or name}"
        if isinstance(value, BaseModel):
            yield from _leaves(value, f"{key}.")
        else:
            yield key, info, value


def is_secret(key: str, info: FieldInfo | None = None) -> bool:
    """True for a key whose value is never shown: typed SecretStr (also inside a list or mapping) or in SECRET_KEYS."""
    if key in SECRET_KEYS:
        return True
    return info is not None and _mentions_secret(info.annotation)


def _shown(key: str, value: object, secret: bool) -> object:
    if secret:
        return None if value in (None, "", [], {}) else "<hidden>"
    if key in URL_KEYS and isinstance(value, str):
        return public_url(value)
    return shown(value)


def config_schema(config: ChorusConfig) -> list[dict[str, object]]:
    """One entry per key of `config`, in the order of the file's sections."""
    entries = []
    for key, info, value in _leaves(config):
        secret = is_secret(key, info)
        type_name, choices = _type_of(info.annotation)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        entries.append({
            "key": key, "type": type_name, "choices": choices, "nullable": _unwrapped(info.annotation)[1],
            "description": info.description or "", "default": _shown(key, default, secret),
            "value": _shown(key, value, secret), "secret": secret, "applies": applies(key),
        })
    return entries


def choices(key: str) -> list[object]:
    """The values a choice key allows ([] for any other key)."""
    for name, info, _value in _leaves(ChorusConfig()):
        if name == key:
            return _type_of(info.annotation)[1]
    return []


def secret_keys(config: ChorusConfig) -> frozenset[str]:
    """The dotted keys whose values are never shown."""
    return frozenset(key for key, info, _value in _leaves(config) if is_secret(key, info))


__all__ = ["SECRET_KEYS", "Applies", "applies", "choices", "config_schema", "is_secret", "secret_keys"]
