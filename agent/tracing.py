"""The agent's spans, through the OpenTelemetry API only: one per model call, one per tool call.

Owns the GenAI semantic-convention names the agent writes (`GENAI`), `model_call` (a `chat {model}` span,
kind CLIENT: the model asked, the model that answered, the tokens and the finish reason) and `tool_call`
(an `execute_tool {tool}` span). A span is made only inside a traced message (the current span is
recording): with no SDK installed (telemetry off) the current span never is, so a call costs one
context lookup and nothing is recorded. The API itself is not imported here: a process that never
loaded it (an offline command) has no trace to be in. Whoever runs the agent installs the SDK.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from agent.messages import ToolCall

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanKind

TRACER_NAME = "chorus.agent"

PROVIDER = "openai"  # the API every model endpoint here speaks (`gen_ai.provider.name`)


class GENAI:
    """Attribute names and values of the OpenTelemetry GenAI semantic conventions (gen-ai-spans, execute-tool)."""

    OPERATION = "gen_ai.operation.name"
    PROVIDER = "gen_ai.provider.name"
    REQUEST_MODEL = "gen_ai.request.model"
    RESPONSE_MODEL = "gen_ai.response.model"
    INPUT_TOKENS = "gen_ai.usage.input_tokens"
    OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
    FINISH_REASONS = "gen_ai.response.finish_reasons"
    TOOL_NAME = "gen_ai.tool.name"
    TOOL_CALL_ID = "gen_ai.tool.call.id"
    TOOL_TYPE = "gen_ai.tool.type"
    SERVER_ADDRESS = "server.address"
    SERVER_PORT = "server.port"
    ERROR_TYPE = "error.type"
    CHAT = "chat"  # operation of a model call
    EXECUTE_TOOL = "execute_tool"  # operation of a tool call


class Answer(Protocol):
    """What a model call answered (`agent.model_client.Completion`)."""

    @property
    def model(self) -> str: ...

    @property
    def prompt_tokens(self) -> int | None: ...

    @property
    def completion_tokens(self) -> int | None: ...

    @property
    def finish_reason(self) -> str | None: ...


class CallSpan:
    """The span of one model or tool call, to note its outcome on (does nothing when the call is not traced)."""

    __slots__ = ("span",)

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def answered(self, answer: Answer) -> None:
        span = self.span
        if span is None:
            return
        span.set_attribute(GENAI.RESPONSE_MODEL, answer.model)
        if answer.prompt_tokens is not None:
            span.set_attribute(GENAI.INPUT_TOKENS, answer.prompt_tokens)
        if answer.completion_tokens is not None:
            span.set_attribute(GENAI.OUTPUT_TOKENS, answer.completion_tokens)
        if answer.finish_reason:
            span.set_attribute(GENAI.FINISH_REASONS, [answer.finish_reason])

    def failed(self, error: BaseException) -> None:
        """A failure the caller handles (a tool's error goes back to the model): the span still shows it."""
        if self.span is not None:
            _failed(self.span, error)


_UNTRACED = contextlib.nullcontext(CallSpan(None))  # reusable: what every call gets outside a traced message


def _failed(span: Span, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute(GENAI.ERROR_TYPE, type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, type(error).__name__))


def traced() -> bool:
    """Whether the caller is inside a recorded span (a traced message, telemetry on)."""
    api = sys.modules.get("opentelemetry.trace")  # never loaded: nothing in this process is traced
    return api is not None and bool(api.get_current_span().is_recording())


@contextlib.contextmanager
def _span(name: str, kind: str, attributes: dict[str, str | int]) -> Iterator[CallSpan]:
    from opentelemetry import trace

    span_kind: SpanKind = trace.SpanKind[kind]
    with trace.get_tracer(TRACER_NAME).start_as_current_span(name, kind=span_kind, attributes=attributes) as span:
        try:
            yield CallSpan(span)
        except BaseException as exc:  # a cancelled call too (the SDK marks only an `Exception` as an error)
            _failed(span, exc)
            raise


def model_call(model: str, base_url: str | None) -> contextlib.AbstractContextManager[CallSpan]:
    """`with model_call(...) as call:` around one request; `call.answered(completion)` once it answered."""
    if not traced():
        return _UNTRACED
    attributes: dict[str, str | int] = {GENAI.OPERATION: GENAI.CHAT, GENAI.PROVIDER: PROVIDER,
                                        GENAI.REQUEST_MODEL: model}
    if base_url:
        parts = urlsplit(base_url)
        if parts.hostname:
            attributes[GENAI.SERVER_ADDRESS] = parts.hostname
        if parts.port:
            attributes[GENAI.SERVER_PORT] = parts.port
    return _span(f"{GENAI.CHAT} {model}", "CLIENT", attributes)


def tool_call(call: ToolCall) -> contextlib.AbstractContextManager[CallSpan]:
    """`with tool_call(call) as span:` around running one tool the model asked for."""
    if not traced():
        return _UNTRACED
    attributes: dict[str, str | int] = {GENAI.OPERATION: GENAI.EXECUTE_TOOL, GENAI.TOOL_NAME: call.name,
                                        GENAI.TOOL_TYPE: "function"}
    if call.id:
        attributes[GENAI.TOOL_CALL_ID] = call.id
    return _span(f"{GENAI.EXECUTE_TOOL} {call.name}", "INTERNAL", attributes)


__all__ = ["GENAI", "PROVIDER", "Answer", "CallSpan", "model_call", "tool_call", "traced"]
