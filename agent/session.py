"""The per-session agent: conversation history, context engine, frozen prompt snapshot and loop.

Owns `SessionAgent` and `AgentState`, the JSON-able part that must survive a
process move or a restart (engine counters and cooldowns, last real prompt
tokens, previous summary, the frozen notes snapshot), so any process can
rebuild the same agent from the session store plus this state. Knows nothing
of platforms, locks or caches: the gateway loads, saves and persists.
"""
from __future__ import annotations

import copy
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from agent.context.engine import CompressionResult, ContextEngine, EngineState, EventSink, Trigger
from agent.loop import ConversationLoop, LoopSettings, SteerSource, ToolSink, TurnResult
from agent.messages import Message
from agent.model_client import ModelClient, TextSink
from agent.prompt import build_system_prompt
from agent.tools.base import Tool, ToolContext, ToolSource

STATE_VERSION = 1
_ENGINE_FIELDS = tuple(f.name for f in fields(EngineState))
_ENGINE_VALUES = operator.attrgetter(*_ENGINE_FIELDS)  # one C call for every field


def _engine_json(engine: EngineState) -> dict[str, Any]:
    """`engine.to_json()` without `dataclasses.asdict`, which deep-copies field by field (~150 us a turn).

    Same dict: the fields are scalars except `extra`, which is copied deeply as
    `asdict` would. A subclass keeps its own `to_json`.
    """
    if type(engine) is not EngineState:
        return engine.to_json()
    out = dict(zip(_ENGINE_FIELDS, _ENGINE_VALUES(engine)))
    out["extra"] = copy.deepcopy(engine.extra) if engine.extra else {}
    return out


@dataclass(slots=True)
class SessionMarks:
    """Bookkeeping kept with a session between turns and processes (typed; JSON keys kept stable)."""

    warned: list[str] = field(default_factory=list)  # warnings already shown once ("blocked", "aborted")
    last_turn_at: float | None = None  # wall-clock time of the last turn, for idle compaction
    stalled_at: int | None = None  # hygiene made no progress at this message count; retried once it grows
    base_prompt: str | None = None  # the persona frozen for this session, like the notes snapshot
    prompt_source: str | None = None  # where it came from: default | config | file | chat
    usage: dict[str, int] = field(default_factory=dict)  # this session's token totals (prompt, completion, requests)
    failed_message: str | None = None  # the text of the user's message whose turn failed, for /retry

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"warned": list(self.warned)}
        if self.base_prompt is not None:
            out["base_prompt"], out["prompt_source"] = self.base_prompt, self.prompt_source or "default"
        if self.usage:
            out["usage"] = dict(self.usage)
        if self.failed_message is not None:
            out["failed_message"] = self.failed_message
        if self.last_turn_at is not None:
            out["last_turn_at"] = self.last_turn_at
        if self.stalled_at is not None:
            out["hygiene_stalled_at"] = self.stalled_at
        return out

    @classmethod
    def from_json(cls, raw: object) -> SessionMarks:
        if not isinstance(raw, Mapping):
            return cls()
        warned = raw.get("warned")
        last = raw.get("last_turn_at")
        stalled = raw.get("hygiene_stalled_at")
        prompt, source, usage = raw.get("base_prompt"), raw.get("prompt_source"), raw.get("usage")
        failed = raw.get("failed_message")
        return cls(
            warned=[str(w) for w in warned] if isinstance(warned, list) else [],
            last_turn_at=float(last) if isinstance(last, int | float) and not isinstance(last, bool) else None,
            stalled_at=stalled if isinstance(stalled, int) and not isinstance(stalled, bool) else None,
            base_prompt=prompt if isinstance(prompt, str) and prompt else None,
            prompt_source=source if isinstance(source, str) else None,
            usage={k: v for k, v in usage.items() if isinstance(v, int)} if isinstance(usage, Mapping) else {},
            failed_message=failed if isinstance(failed, str) else None,
        )


@dataclass(slots=True)
class AgentState:
    """What a session's agent carries between processes (all fields JSON-able)."""

    session_id: str
    snapshot: str = ""
    engine: EngineState = field(default_factory=EngineState)
    marks: SessionMarks = field(default_factory=SessionMarks)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "session_id": self.session_id,
            "snapshot": self.snapshot,
            "engine": _engine_json(self.engine),
            "extra": self.marks.to_json(),  # "extra": the key older states were saved under
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> AgentState:
        engine_raw = raw.get("engine")
        return cls(
            session_id=str(raw.get("session_id", "")),
            snapshot=str(raw.get("snapshot", "")),
            engine=EngineState.from_json(engine_raw) if isinstance(engine_raw, Mapping) else EngineState(),
            marks=SessionMarks.from_json(raw.get("extra")),
        )


class SessionAgent:
    """One live conversation.

    Args:
        session_id: the store's id of the active session.
        history: its active messages, oldest first, without the system prompt.
        engine: the context engine; its `state` is replaced by `state.engine` when given.
        model: the main model.
        tools: tools offered to the model.
        loop_settings: per-turn limits.
        base_prompt: the operator's base system prompt.
        state: carried state (snapshot, engine counters); new sessions pass a fresh one.
        tool_source: tools that come and go (MCP), asked before every request.
    """

    def __init__(
        self,
        *,
        session_id: str,
        history: Sequence[Message],
        engine: ContextEngine,
        model: ModelClient,
        tools: Sequence[Tool],
        loop_settings: LoopSettings,
        base_prompt: str,
        state: AgentState,
        tool_source: ToolSource | None = None,
    ) -> None:
        self.session_id = session_id
        self.history: list[Message] = list(history)
        self.engine = engine
        engine.state = state.engine
        self.state = state
        self._base_prompt = base_prompt
        self._prompt: tuple[str, bool, str] | None = None  # (snapshot, compacted, the system prompt built of them)
        # Scanned once: a resumed history may start with a summary (in-process flag, not stored).
        self._had_summary = any(m.compressed_summary for m in self.history)
        self.loop = ConversationLoop(
            model=model, engine=engine, tools=tools, settings=loop_settings, system_prompt=self.system_prompt,
            source=tool_source,
        )

    def system_prompt(self) -> str:
        compacted = self._had_summary or self.engine.state.compression_count > 0
        snapshot = self.state.snapshot
        # Asked before every request, and the same until the session is compacted: the text is kept, so
        # each request also carries the same string object (preflight compares it at once).
        kept = self._prompt
        if kept is not None and kept[1] == compacted and kept[0] == snapshot:
            return kept[2]
        prompt = build_system_prompt(self._base_prompt, notes_snapshot=snapshot, compacted=compacted)
        self._prompt = (snapshot, compacted, prompt)
        return prompt

    def export_state(self) -> AgentState:
        """The state to save, with the engine's current counters."""
        self.state.engine = self.engine.state
        self.state.session_id = self.session_id
        return self.state

    async def run_turn(
        self,
        user_message: Message,
        *,
        context: ToolContext,
        on_text: TextSink | None = None,
        on_event: EventSink | None = None,
        recall: str | None = None,
        on_tool: ToolSink | None = None,
        steer: SteerSource | None = None,
    ) -> TurnResult:
        """Run one turn; the agent's history becomes the result's history."""
        result = await self.loop.run(
            self.history, user_message, context=context, on_text=on_text, on_event=on_event, recall=recall,
            on_tool=on_tool, steer=steer,
        )
        self.history = result.history  # the turn's own list, handed over (see `TurnResult`)
        return result

    async def compress(
        self, *, trigger: Trigger, force: bool = False, on_event: EventSink | None = None
    ) -> CompressionResult:
        """Compress the history now (hygiene, `/compress`); history changes only on `compressed`."""
        result = await self.loop.compress(self.history, trigger=trigger, force=force, on_event=on_event)
        if result.changed:
            self.history = list(result.messages)
        return result

    def append_context(self, messages: Sequence[Message]) -> None:
        """Record messages that need no answer (unmentioned group lines)."""
        self.history.extend(messages)


__all__ = ["AgentState", "SessionAgent", "SessionMarks"]
