"""Context management: the `ContextEngine` contract and the built-in `ContextCompressor`."""
from agent.context.engine import (
    CompressionEvent,
    CompressionResult,
    ContextEngine,
    EngineState,
    EventSink,
    Outcome,
    SummaryKind,
    Trigger,
)

__all__ = [
    "CompressionEvent",
    "CompressionResult",
    "ContextEngine",
    "EngineState",
    "EventSink",
    "Outcome",
    "SummaryKind",
    "Trigger",
]
