"""`/status`: what it shows of a session, and how.

Owns `StatusInfo`, `ActivePlugins` (the context engine and memory provider in
use) and `render_status`. Pure.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ActivePlugins:
    """`context.engine` and `memory.provider` as configured ("" provider: none)."""

    context_engine: str = "compressor"
    memory_provider: str = ""


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
    window_note: str = ""  # set when the active model's window is not the configured one
    plugins: ActivePlugins | None = None


def render_status(info: StatusInfo) -> str:
    lines = [
        f"tokens used: {info.tokens_used:,} ({info.tokens_source}) of {info.context_length:,}",
        f"compression threshold: {info.threshold:,}",
        f"compressions so far: {info.compressions}",
        f"messages in context: {info.messages}",
    ]
    if info.model:
        lines.append(f"model: {info.model}")
    if info.prompt_source:
        lines.append(f"system prompt: {info.prompt_source}")
    if info.plugins is not None:
        lines.append(f"context engine: {info.plugins.context_engine}")
        lines.append(f"memory provider: {info.plugins.memory_provider or 'none'}")
    if info.window_note:
        lines.append(info.window_note)
    if info.blocked:
        lines.append("automatic compression is paused (anti-thrash); /compress forces one")
    if info.busy:
        lines.append(f"working on a reply; {info.queued} message(s) queued")
    return "\n".join(lines)


__all__ = ["ActivePlugins", "StatusInfo", "render_status"]
