"""Context management: the `ContextEngine` contract and the built-in `ContextCompressor`."""
from agent.context._cut import cut_largest
from agent.context._drop import drop_oldest
from agent.context._handoff import is_handoff, unmerge
from agent.context._summarizer import FallbackOnly, ModelSummarizer, Summarizer, SummaryRequest
from agent.context.compressor import ContextCompressor
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
from agent.context.explain import CompressionExplain, MessageFate
from agent.context.factory import build_compressor, build_engine, build_summarizer, register_engine
from agent.context.sections import HandoffSection
from agent.context.thresholds import compute_threshold

__all__ = [
    "cut_largest",
    "drop_oldest",
    "is_handoff",
    "unmerge",
    "CompressionEvent",
    "CompressionExplain",
    "CompressionResult",
    "ContextCompressor",
    "ContextEngine",
    "EngineState",
    "EventSink",
    "FallbackOnly",
    "HandoffSection",
    "MessageFate",
    "ModelSummarizer",
    "Outcome",
    "Summarizer",
    "SummaryKind",
    "SummaryRequest",
    "Trigger",
    "build_compressor",
    "build_engine",
    "build_summarizer",
    "compute_threshold",
    "register_engine",
]
