"""Every configuration key does something: production code reads each field of the config models."""
from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from gateway.config import ChorusConfig

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = {ROOT / "agent" / "settings.py", ROOT / "gateway" / "config.py"}
# Keys read by name rather than by attribute (each with where and why).
READ_BY_NAME = {
    "PlatformsSettings.telegram", "PlatformsSettings.discord", "PlatformsSettings.slack",  # getattr(platforms, name)
    "SlackSettings.signing_secret",  # gateway/platforms/slack.py reads secrets by key name
}


def _fields(model: type[BaseModel], seen: set[type[BaseModel]]) -> list[tuple[str, str]]:
    if model in seen:
        return []
    seen.add(model)
    out = []
    for name, info in model.model_fields.items():
        out.append((model.__name__, name))
        annotation = info.annotation
        for candidate in _models_in(annotation):
            out.extend(_fields(candidate, seen))
    return out


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()):  # list[X], dict[str, X], X | None
        found.extend(_models_in(arg))
    return found


def _production_source() -> str:
    texts = []
    for package in ("agent", "gateway", "adapters"):
        for path in (ROOT / package).rglob("*.py"):
            if path not in DEFINITIONS:
                texts.append(path.read_text(encoding="utf-8"))
    return "\n".join(texts)


def test_every_config_key_is_read_by_production_code() -> None:
    source = _production_source()
    unread = [
        f"{model}.{name}"
        for model, name in _fields(ChorusConfig, set())
        if f"{model}.{name}" not in READ_BY_NAME and not re.search(rf"\.{re.escape(name)}\b", source)
    ]
    assert unread == [], "config keys that no production code reads (implement or remove them)"
