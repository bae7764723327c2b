"""The replaceable context-management strategy: when to compress, how, and what happened.

Owns the `ContextEngine` contract, the values it exchanges with the loop and
the gateway (`Trigger`, `CompressionEvent`, `CompressionResult`), and
`EngineState`, the part of an engine that must survive a process move or a
restart (it is stored with the agent state in the agent cache).
Knows nothing of platforms, sessions stores or Redis.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias

from agent.context.explain import CompressionExplain
from agent.context.sections import SectionDrops
from agent.messages import Message, ToolSchema

Trigger: TypeAlias = Literal["preflight", "post_response", "error_recovery", "manual", "hygiene", "idle", "offline"]
Outcome: TypeAlias = Literal["compressed", "skipped", "blocked", "aborted"]
SummaryKind: TypeAlias = Literal["llm", "fallback", "none"]
EventKind: TypeAlias = Literal["started", "finished", "blocked", "aborted", "skipped"]


@dataclass(frozen=True, slots=True)
class CompressionEvent:
    """A status event for progress notices; separate from any model "thinking" stream."""

    kind: EventKind
    trigger: Trigger
    tokens_before: int = 0
    tokens_after: int = 0
    reason: str = ""
    facts_dropped: int = 0  # ledger lines given up by this compression (superseded or over budget)


EventSink: TypeAlias = Callable[[CompressionEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class CompressionResult:
    """What one compression did. `messages` is the list to use from now on.

    On `skipped`, `blocked` and `aborted` the messages are the input, unchanged.
    `replaced` holds the original messages that the result no longer carries
    verbatim (for soft-archiving in the session store).
    """

    outcome: Outcome
    trigger: Trigger
    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    summary_kind: SummaryKind = "none"
    pruned_tool_results: int = 0
    replaced: tuple[Message, ...] = ()
    summary_text: str | None = None
    elapsed_ms: float = 0.0
    reason: str = ""
    explain: CompressionExplain | None = None  # per-message fates, for `chorus compress --explain`
    fact_drops: SectionDrops = field(default_factory=SectionDrops)  # what the handoff sections gave up

    @property
    def facts_dropped(self) -> int:
        return self.fact_drops.total

    @property
    def changed(self) -> bool:
        return self.outcome == "compressed"


@dataclass(slots=True)
class EngineState:
    """Anti-thrash and continuity state that persists with the session (plain JSON-able fields)."""

    compression_count: int = 0
    ineffective_streak: int = 0
    fallback_streak: int = 0
    blocked_until: float = 0.0  # epoch seconds; 0 = not blocked
    blocked_notice_sent: bool = False
    cooldown_until: float = 0.0  # summary-model failure cooldown
    cooldown_step: int = 0
    last_prompt_tokens: int = 0  # -1: just compressed, treat as 0 until the provider reports
    last_compressed_at: float = 0.0
    previous_summary: str | None = None
    model: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    awaiting_usage: bool = False  # the first real prompt_tokens after a compression judges it
    usage_fits: bool = False  # that reading was below the threshold: preflight defers to real usage

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> EngineState:
        known = {name: raw[name] for name in cls.__dataclass_fields__ if name in raw}
        return cls(**known)


class ContextEngine(ABC):
    """When and how a conversation's context is compressed.

    The loop calls `should_compress_preflight` before a request,
    `record_usage` + `should_compress` after each response, and `compress`
    on a trigger, on a context-overflow error, or when a user sends
    `/compress` (`force=True`, which clears cooldowns and blocks).
    `compress` never raises for a summary failure: it returns an `aborted`
    or fallback result and leaves the input untouched on any exception.
    """

    state: EngineState

    @property
    @abstractmethod
    def threshold_tokens(self) -> int:
        """The prompt size at which compression triggers."""

    @property
    @abstractmethod
    def context_length(self) -> int:
        """The model's context window in tokens."""

    @abstractmethod
    def should_compress_preflight(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> bool:
        """Cheap gate first, then an estimate that includes the tool schemas."""

    @abstractmethod
    def record_usage(self, prompt_tokens: int) -> None:
        """Record the provider's real `prompt_tokens` (never completion tokens)."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Post-response check against the threshold, honouring cooldowns and anti-thrash blocks."""

    @abstractmethod
    async def compress(
        self,
        messages: Sequence[Message],
        *,
        trigger: Trigger,
        force: bool = False,
        on_event: EventSink | None = None,
    ) -> CompressionResult:
        """Compress `messages` (a deep copy is worked on; any exception rolls back)."""

    def prune_tool_results(self, messages: Sequence[Message], prompt_tokens: int) -> CompressionResult | None:
        """Shrink old tool results alone (no summary) after a response, if the engine is set to; None: nothing done.

        `messages` includes the system prompt, as for `compress`.
        """
        return None
    def idle_compact_due(self, idle_seconds: float) -> bool:
        """Should a session silent for `idle_seconds` be compacted before its next reply? (default: never)."""
        return False

    def on_model_switch(self, model: str) -> None:
        """Counters reset when the model changes."""
        if model != self.state.model:
            self.state = EngineState(model=model)
