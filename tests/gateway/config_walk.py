"""A changed value for every configuration key, generated from the schema's types (tests that walk the schema).

`leaf_annotation(key)` finds a dotted key's type in `ChorusConfig`; `changed_value(live, key)` tries
candidates made from that type (another Literal choice, the other bool, a number nearby, a string, a
list or mapping with one more generated entry, a section with one field set) and returns the first
that the config's own validation accepts and that differs from the running value. A key of a type
it cannot make a value for raises `Unwalkable`: a new key of a new kind fails the walk, never skips.
Values are JSON-able (what a PATCH body carries); URLs point at a closed loopback port.
"""
from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from chorus_errors import ConfigError
from gateway.config import ChorusConfig
from gateway.config import _unwrap as unwrapped  # `X | None`, `Annotated[X, …]` -> X: the loader's own
from gateway.ops.live_config import LiveConfig, flatten, shown

DEAD_ORIGIN = "http://127.0.0.1:9"  # port 9 (discard) is closed on loopback: nothing is ever reached
DEAD_URL = f"{DEAD_ORIGIN}/changed"
NAMES = ("telegram:4242", "changed")  # mapping keys tried: a chat scope first (chats), then a plain name


class Unwalkable(AssertionError):
    """The walker cannot make a changed value for a key of this type."""


def leaf_annotation(key: str) -> object:
    """The type annotation of dotted `key` (`limits.global.cost_per_day`)."""
    model: type[BaseModel] = ChorusConfig
    parts = key.split(".")
    for index, part in enumerate(parts):
        fields = {info.alias or name: info for name, info in model.model_fields.items()}
        annotation = fields[part].annotation
        if index == len(parts) - 1:
            return annotation
        base = unwrapped(annotation)
        assert isinstance(base, type) and issubclass(base, BaseModel), key
        model = base
    raise Unwalkable(key)


def candidates(annotation: object, current: Any) -> list[Any]:
    """JSON-able values of `annotation`'s type, different from `current` where the type allows."""
    base = unwrapped(annotation)
    origin = typing.get_origin(base)
    if origin is typing.Literal:
        return [choice for choice in typing.get_args(base) if choice != current]
    if base is bool:
        return [not current]
    if base is int:
        number = current if isinstance(current, int) else 0
        return [number + 1, number - 1, number * 2 + 100, 1, 1024, 200_000]
    if base is float:
        start = float(current) if isinstance(current, (int, float)) else 0.0
        return [start + 0.5, start / 2, start + 1, 0.5, 1.0, 120.0]
    if base is str:
        # Plain text, a URL, an origin, a path, a language tag, a chat address (PLATFORM:CHAT_ID), a cron line.
        return [f"{current}-changed" if current else "changed", DEAD_URL, DEAD_ORIGIN, "/changed",
                "de" if current == "zh" else "zh", "telegram:-100123", "0 9 * * 1-5"]
    if base is Path:
        return [f"{current}-changed"]
    if base is SecretStr:
        return ["secret-changed-0042"]
    if origin is list:
        (item,) = typing.get_args(base)
        existing = list(current or [])
        return [[*existing, value] for value in candidates(item, None) if value not in existing]
    if origin is dict:
        _key_type, item = typing.get_args(base)
        mapping = shown(current or {})
        assert isinstance(mapping, dict)
        return [{**mapping, name: value} for name in NAMES if name not in mapping for value in candidates(item, None)]
    if isinstance(base, type) and issubclass(base, BaseModel):
        return _sections(base)
    raise Unwalkable(f"no values for type {annotation!r}")


def _sections(model: type[BaseModel]) -> list[dict[str, Any]]:
    """A section as a mapping: its required fields filled, then with one optional field set as well (each of that
    field's candidates in turn: a section may be valid only with the right kind of string, e.g. a cron line)."""
    required = {
        (info.alias or name): candidates(info.annotation, None)[0]
        for name, info in model.model_fields.items() if info.is_required()
    }
    out = [required]
    for name, info in model.model_fields.items():
        if not info.is_required():
            for value in candidates(info.annotation, None):
                out.append({**required, info.alias or name: value})
    return out


def changed_value(live: LiveConfig, key: str) -> Any:
    """The first candidate for `key` the schema accepts that changes its value in `live` (Unwalkable: none)."""
    current = flatten(live.current())[key]
    plain = current.get_secret_value() if isinstance(current, SecretStr) else current
    for value in candidates(leaf_annotation(key), plain):
        try:
            after = flatten(live.preview({key: value}))[key]
        except ConfigError:
            continue
        if after != current:
            return value
    raise Unwalkable(f"{key}: no generated value passes the schema and changes it")


__all__ = ["DEAD_URL", "Unwalkable", "candidates", "changed_value", "leaf_annotation"]
