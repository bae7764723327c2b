"""`/status`: what it shows of a session, and how.

Owns `StatusInfo`, `ActivePlugins` (the context engine and memory provider in
use) and `render_status`. Pure.
"""
from __future__ import annotations

from dataclasses import dataclass

from gateway.i18n import Phrase, joined, say, say_n


@dataclass(frozen=True, slots=True)
class ActivePlugins:
    """`context.engine` and `memory.provider` as configured ("" provider: none)."""

    context_engine: str = "compressor"
    memory_provider: str = ""


@dataclass(frozen=True, slots=True)
class WindowNote:
    """The model answering now when it is not the main one, and its window when learned smaller than configured."""

    fallback: str = ""  # the fallback's name ("": the main model)
    learned: int = 0  # 0: the configured window holds
    configured: int = 0


@dataclass(frozen=True, slots=True)
class StatusInfo:
    session_key: str
    messages: int
    tokens_used: int
    tokens_source: str  # "reported" | "estimate"
    threshold: int
    context_length: int
    compressions: int
    busy: bool
    queued: int
    blocked: bool = False
    prompt_source: str = ""
    model: str = ""
    window: WindowNote | None = None  # set when the active model or its window is not the configured one
    plugins: ActivePlugins | None = None


def _window_line(note: WindowNote, language: str) -> Phrase | None:
    parts = []
    if note.fallback:
        parts.append(say(language, "status.fallback", name=note.fallback))
    if note.learned:
        parts.append(say(language, "status.window", window=note.learned, configured=note.configured))
    return joined(parts, "; ") if parts else None


def render_status(info: StatusInfo, language: str) -> Phrase:
    source = say(language, "status.source.reported" if info.tokens_source == "reported" else "status.source.estimate")
    lines = [
        say(language, "status.tokens", used=info.tokens_used, source=source, window=info.context_length),
        say(language, "status.threshold", threshold=info.threshold),
        say(language, "status.compressions", n=info.compressions),
        say(language, "status.messages", n=info.messages),
    ]
    if info.model:
        lines.append(say(language, "status.model", model=info.model))
    if info.prompt_source:
        lines.append(say(language, "status.prompt", source=info.prompt_source))
    if info.plugins is not None:
        lines.append(say(language, "status.engine", engine=info.plugins.context_engine))
        lines.append(say(language, "status.memory", provider=info.plugins.memory_provider or say(language, "model.none")))
    if info.window is not None and (line := _window_line(info.window, language)) is not None:
        lines.append(line)
    if info.blocked:
        lines.append(say(language, "status.paused"))
    if info.busy:
        lines.append(say_n(language, "status.busy", info.queued))
    return joined(lines)


__all__ = ["ActivePlugins", "StatusInfo", "WindowNote", "render_status"]
