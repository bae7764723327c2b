"""What the live-config followers rebuild a running part with: one bundle of builders, made by `build_gateway`.

Owns `Rebuilders`: the main model client that is swapped in place, the clients by name, and the
functions that make a part's settings (or a platform's adapter) from a changed config. Built once
in `gateway/build.py` (which knows how each part is made); read by `gateway/live_parts.py` (which
knows when). Holds no state of its own and does no I/O.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapters.base import PlatformAdapter
from agent.loop import LoopSettings
from agent.memory import NotesStore
from agent.memory.llm_screen import LlmScreen
from agent.model_client import ModelClient
from agent.model_windows import ModelWindows
from agent.tools.memory_tool import MemoryTool
from agent.transcription import Transcriber
from gateway.chats.models import LiveModel, ModelClients
from gateway.config import ChorusConfig
from gateway.intake.decide import IntakeSettings
from gateway.sessions.media import MediaReader, MediaSettings
from gateway.sessions.review import ReviewHooks
from gateway.sessions.turns import TurnSettings


@dataclass(frozen=True, slots=True)
class Rebuilders:
    """How each part that holds built objects is remade from a changed config."""

    model: LiveModel  # the main model every part holds; its chain is replaced in place
    clients: ModelClients  # the chats' other models by name
    windows: ModelWindows  # learned windows; the main endpoint follows `model.*`
    model_chain: Callable[[ChorusConfig], ModelClient]  # `model.*` -> a new chain
    adapter: Callable[[ChorusConfig, str], PlatformAdapter | None]  # platform name -> its adapter (None: disabled)
    loop_settings: Callable[[ChorusConfig], LoopSettings]
    turn_settings: Callable[[ChorusConfig], TurnSettings]
    intake_settings: Callable[[ChorusConfig], IntakeSettings]
    media: MediaReader | None
    media_settings: Callable[[ChorusConfig], MediaSettings]
    transcriber: Callable[[ChorusConfig], Transcriber | None]
    notes: NotesStore
    review: ReviewHooks | None  # the memory and skill review after turns (None: a test's own post-turn hook)
    memory_tool: MemoryTool
    memory_screen: Callable[[ChorusConfig], LlmScreen | None]  # `memory.llm_screen`'s model


__all__ = ["Rebuilders"]
