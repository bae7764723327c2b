"""The gateway's spans over one message: intake → queue → session lock → (the agent's model and tool calls) → delivery.

Owns the span names (`SPANS`), `IntakeSpans` (one root span per message taken from the adapters' queue,
its W3C `traceparent` stamped on the message, so the journal keeps it), `job_span` (a lane job's span,
a child of that intake span on whichever replica runs the job: its parent comes from the message, not
from this process; the job's log lines carry its `trace_id`), `stage` (a child span of the current one),
`note` and `mark_failed`. Only the API is used: while no SDK is installed (telemetry off) each helper
returns a shared no-op after one cheap check.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from structlog.contextvars import bind_contextvars

from adapters.base import InboundMessage

if TYPE_CHECKING:
    from gateway.intake.queueing import Job

_tracer = trace.get_tracer("chorus.gateway")
_w3c = TraceContextTextMapPropagator()
_NOTHING: contextlib.nullcontext[None] = contextlib.nullcontext()


class SPANS:
    """Span names and the gateway's own attribute keys (docs/design.md lists them)."""

    INTAKE = "chorus.intake"  # taken from the adapters' queue → decided → journaled → queued on its lane
    JOB = "chorus.job"  # one lane job (a turn, a recorded group line, a queued command), from acceptance to its end
    QUEUE = "chorus.queue"  # the job's wait on its session's lane
    SESSION_LOCK = "chorus.session_lock"  # waiting for the session's lock (held by another job or replica)
    DELIVERY = "chorus.delivery"  # the reply recorded in the outbox and sent to the platform
    PLATFORM = "chorus.platform"
    CHAT_TYPE = "chorus.chat_type"
    VERDICT = "chorus.verdict"  # the intake decision: turn, record, command, refuse, duplicate, …
    JOB_KIND = "chorus.job.kind"
    RESUMED = "chorus.resumed"  # run again after its replica stopped or died (a takeover, or a restart)
    SENT = "chorus.delivery.sent"
    CANCELLED = "chorus.cancelled"  # the job was cancelled (a shutdown leaves its message for a re-run)


class _Installed:
    """Whether `gateway.telemetry.setup` installed the SDK's tracer provider (a flag: asking the API costs µs)."""

    on = False


def tracing_on() -> bool:
    """Whether an SDK tracer provider is installed: else every span is a no-op."""
    return _Installed.on


def provider_installed() -> None:
    """Called by `gateway.telemetry.setup` once its tracer provider is the process's."""
    _Installed.on = True


def traceparent_of(span: Span) -> str | None:
    """The W3C `traceparent` header naming `span` (None for an invalid span)."""
    carrier: dict[str, str] = {}
    _w3c.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent")


def context_of(traceparent: str | None) -> Context | None:
    """The remote parent a `traceparent` names (None: none given, the new span is a root)."""
    return _w3c.extract({"traceparent": traceparent}) if traceparent else None


class IntakeSpans:
    """`with traced_intake(messages) as spans:` around deciding a batch; every span ends when the block does.

    Each message of `messages` is replaced in the list by itself stamped with its span's `traceparent`.
    """

    __slots__ = ("_spans",)

    def __init__(self, messages: list[InboundMessage]) -> None:
        self._spans: dict[str, Span] = {}
        for index, message in enumerate(messages):
            span = _tracer.start_span(SPANS.INTAKE, kind=SpanKind.CONSUMER, attributes={
                SPANS.PLATFORM: message.platform, SPANS.CHAT_TYPE: message.chat_type})
            parent = traceparent_of(span)
            if parent is None:
                span.end()
                continue
            self._spans[parent] = span
            messages[index] = replace(message, traceparent=parent)

    def decided(self, message: InboundMessage, verdict: str) -> None:
        span = self._spans.get(message.traceparent or "")
        if span is not None:
            span.set_attribute(SPANS.VERDICT, verdict)

    def __enter__(self) -> IntakeSpans:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for span in self._spans.values():
            if exc is not None:
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            span.end()


class _Untraced(IntakeSpans):
    __slots__ = ()

    def __init__(self) -> None:
        self._spans = {}

    def decided(self, message: InboundMessage, verdict: str) -> None:
        return None


_UNTRACED = _Untraced()


def traced_intake(messages: list[InboundMessage]) -> IntakeSpans:
    """Intake spans for a batch just taken (the shared no-op while tracing is off: the messages are left as they are)."""
    return IntakeSpans(messages) if tracing_on() else _UNTRACED


@contextlib.contextmanager
def _job_span(job: Job) -> Iterator[None]:
    start = int(job.accepted_at * 1e9) if job.accepted_at else None
    span = _tracer.start_span(SPANS.JOB, context=context_of(job.message.traceparent), start_time=start, attributes={
        SPANS.JOB_KIND: job.kind, SPANS.RESUMED: job.resumed, SPANS.PLATFORM: job.message.platform})
    with trace.use_span(span, end_on_exit=True):
        bind_contextvars(trace_id=format(span.get_span_context().trace_id, "032x"))  # the job's log lines name it
        if start is not None:
            _tracer.start_span(SPANS.QUEUE, start_time=start).end()  # from acceptance until the lane ran the job
        try:
            yield
        except asyncio.CancelledError:
            span.set_attribute(SPANS.CANCELLED, True)  # stopped, interrupted or shut down: not a failure
            raise


def job_span(job: Job) -> contextlib.AbstractContextManager[None]:
    """`with job_span(job):` around running a lane job: the current span for its stages, the model and the tools."""
    return _job_span(job) if tracing_on() else _NOTHING


def stage(name: str, attributes: dict[str, str | bool | int] | None = None) -> contextlib.AbstractContextManager[object]:
    """`with stage(...):` a child span of the current one (none outside a traced message)."""
    if not trace.get_current_span().is_recording():
        return _NOTHING
    return _tracer.start_as_current_span(name, attributes=attributes)


def note(key: str, value: str | bool | int) -> None:
    """An attribute of the current span (nothing outside a traced message)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(key, value)


def mark_failed(error: BaseException) -> None:
    """The current span failed with `error` (which its caller handled: the chat was told)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, type(error).__name__))


__all__ = [
    "SPANS", "IntakeSpans", "context_of", "job_span", "mark_failed", "note", "provider_installed", "stage",
    "traced_intake", "traceparent_of", "tracing_on",
]
