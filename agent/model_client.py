"""The model client: one chat-completion call through the `openai` SDK, errors translated.

Owns `ModelClient` (the Protocol the loop and the summariser depend on),
`Completion`, and `OpenAIModelClient`. SDK retries are off: callers decide
retries and fallbacks from the typed errors, so one 429 never stalls a turn.

The request body is built here as JSON bytes (`agent._request_body`, each
history message serialised once) and sent through the SDK's raw request path,
skipping its per-field transform (most of a turn's CPU on long histories);
responses and errors still come from the SDK, as its own types. A streamed
call, the gateway's hot path, skips the SDK's request machinery as well: it
is POSTed over aiohttp by `agent._stream_request` (the SDK's HTTP stack was
most of its CPU) and its events read off the response by `agent._sse`, both
raising the SDK's error types as the SDK would. The
SDK is imported on first use, so commands that never call a model never load it.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agent._request_body import RequestBodies
from agent._sse import EventSource, stream_events
from agent._stream_request import StreamRequests
from agent.messages import Message, ToolCall, ToolSchema
from agent.provider_limits import is_overflow_text, stated_limit
from agent.tracing import model_call
from agent.usage_meter import report_completion
from chorus_errors import (
    ContextOverflow,
    ModelAuthError,
    ModelError,
    ModelNotConfigured,
    ModelUnavailable,
    RateLimited,
)

if TYPE_CHECKING:
    import openai

TextSink = Callable[[str], Awaitable[None]]
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "request_too_large", "string_above_max_length"})


@dataclass(frozen=True, slots=True)
class Completion:
    message: Message  # the assistant message: text and/or tool calls
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    model: str


class ModelClient(Protocol):
    """One model endpoint. Raises `ModelError` subclasses, never SDK exceptions."""

    model: str

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion: ...

    async def close(self) -> None:
        """Release the endpoint's connections (idempotent)."""
        ...


def _error_code(exc: openai.APIStatusError) -> str | None:
    body = exc.body
    if isinstance(body, dict):
        code = body.get("code") or body.get("type")
        if isinstance(code, str):
            return code
    return exc.code if isinstance(getattr(exc, "code", None), str) else None


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return float(value) * scale
            except ValueError:
                return None
    return None


def _error_text(exc: openai.APIStatusError) -> str:
    """The message and the body's fields (llama.cpp states `n_ctx` there), for the overflow reader."""
    body = exc.body
    return f"{exc.message} {json.dumps(body, default=str)}" if isinstance(body, dict) else str(exc.message)


def translate_error(exc: Exception, model: str) -> ModelError:
    """Map an SDK exception to our hierarchy by type, status and error code."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ModelUnavailable(f"model {model} timed out", model=model, timeout=True)
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnavailable(f"model {model} could not be reached", model=model, connection=True)
    if isinstance(exc, openai.APIStatusError):
        status, code = exc.status_code, _error_code(exc)
        text = _error_text(exc)
        if status == 413 or code in _OVERFLOW_CODES or (status not in (401, 403, 429) and is_overflow_text(text)):
            return ContextOverflow(
                f"request too large for model {model}", status=status, model=model, stated_limit=stated_limit(text)
            )
        if status == 429:
            return RateLimited(
                f"model {model} rate limited the request",
                model=model,
                retry_after=_retry_after(exc),
                long_context=code in _OVERFLOW_CODES or code == "long_context_rate_limit",
            )
        if status in (401, 403):
            return ModelAuthError(f"model {model} rejected the credentials ({status})", status=status, model=model)
        if status == 404 or status >= 500:
            return ModelUnavailable(f"model {model} unavailable ({status})", status=status, model=model)
        return ModelError(f"model {model} refused the request ({status})", status=status, model=model)
    if isinstance(exc, openai.APIError):  # e.g. an error event in the middle of a stream
        return ModelUnavailable(f"model {model} stream failed", model=model)
    return ModelError(f"model {model} call failed: {type(exc).__name__}", model=model)


class OpenAIModelClient:
    """`ModelClient` over any OpenAI-compatible endpoint.

    Args:
        model: model id sent with each request.
        base_url: endpoint root (…/v1); None means the SDK default.
        api_key: the key; never logged.
        timeout_seconds: per-request timeout.
    """

    def __init__(
        self, *, model: str | None, base_url: str | None, api_key: str | None, timeout_seconds: float = 120.0
    ) -> None:
        self.model = model or ""
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._client: openai.AsyncOpenAI | None = None
        self._streams: StreamRequests | None = None
        self._bodies = RequestBodies()

    def _sdk(self) -> openai.AsyncOpenAI:
        return self._endpoint()[0]

    def _endpoint(self) -> tuple[openai.AsyncOpenAI, StreamRequests]:
        """The SDK client and the streaming requests beside it, made on first use (sharing one HTTP client)."""
        if not self.model:
            raise ModelNotConfigured("no model configured: set model.name (and model.base_url, model.api_key)")
        if self._client is None or self._streams is None:
            import openai

            key = self._api_key or "unset"
            self._client = openai.AsyncOpenAI(base_url=self._base_url, api_key=key, max_retries=0, timeout=self._timeout)
            headers = {name: value for name, value in self._client.default_headers.items() if isinstance(value, str)}
            self._streams = StreamRequests(
                str(self._client.base_url.join("chat/completions")), {**headers, "Authorization": f"Bearer {key}"},
                self._timeout,
            )
        return self._client, self._streams

    async def close(self) -> None:
        client, streams = self._client, self._streams
        self._client = self._streams = None
        if client is not None:
            await client.close()
        if streams is not None:
            await streams.close()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        sdk, streams = self._endpoint()  # first: an unconfigured model fails before anything is loaded or built
        import openai

        body = self._bodies.build(
            model=self.model, messages=messages, tools=tools, max_tokens=max_tokens, stream=on_text is not None
        )
        with model_call(self.model, self._base_url) as call:  # a `chat` span inside a traced message
            try:
                if on_text is None:
                    completion = self._from_response(await _post(sdk, body))
                else:
                    completion = await self._stream(await streams.post(body), on_text)
            except openai.OpenAIError as exc:
                raise translate_error(exc, self.model) from None
            call.answered(completion)
        await report_completion(  # the configured name: the one `pricing` is keyed by
            self.model, messages, tools, completion.message, completion.prompt_tokens, completion.completion_tokens
        )
        return completion

    def _from_response(self, response: Any) -> Completion:
        choices = _items(_field(response, "choices"))
        if not choices:
            raise ModelUnavailable(f"model {self.model} returned no choices", model=self.model)
        choice = _field(choices[0])
        raw = _field(choice, "message")
        calls = tuple(
            ToolCall(
                id=_text(_field(call, "id")),
                name=_text(_field(_field(call, "function"), "name")),
                arguments=_text(_field(_field(call, "function"), "arguments")) or "{}",
            )
            for call in _items(_field(raw, "tool_calls"))
        )
        prompt_tokens, completion_tokens = _usage(_field(response, "usage"))
        content = _field(raw, "content")
        return Completion(
            message=Message(role="assistant", content=content if isinstance(content, str) else None, tool_calls=calls),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=_text(_field(choice, "finish_reason")) or None,
            model=_text(_field(response, "model")) or self.model,
        )

    async def _stream(self, response: EventSource, on_text: TextSink) -> Completion:
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        prompt_tokens = completion_tokens = None
        finish_reason = None
        model = self.model
        # Once per streamed delta (a provider sends one a token): the fields read inline, each checked for its type.
        async for chunk in stream_events(response):  # parsed JSON objects; an error event raises
            if not isinstance(chunk, dict):
                continue
            name = chunk.get("model")
            if name and isinstance(name, str):
                model = name
            usage = chunk.get("usage")
            if usage:
                prompt_tokens, completion_tokens = _usage(usage)
            choices = chunk.get("choices")
            if not choices or not isinstance(choices, list):
                continue
            choice = choices[0]
            if not isinstance(choice, dict):
                continue
            reason = choice.get("finish_reason")
            if reason and isinstance(reason, str):
                finish_reason = reason
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            content = delta.get("content")
            if content and isinstance(content, str):
                text.append(content)
                await on_text(content)
            deltas = delta.get("tool_calls")
            for call in deltas if isinstance(deltas, list) else ():
                index = _field(call, "index")
                slot = calls.setdefault(index if isinstance(index, int) else 0, {"id": "", "name": "", "arguments": ""})
                slot["id"] = _text(_field(call, "id")) or slot["id"]
                function = _field(call, "function")
                slot["name"] += _text(_field(function, "name"))
                slot["arguments"] += _text(_field(function, "arguments"))
        tool_calls = tuple(
            ToolCall(id=slot["id"], name=slot["name"], arguments=slot["arguments"] or "{}")
            for _, slot in sorted(calls.items())
        )
        return Completion(
            message=Message(role="assistant", content="".join(text) or None, tool_calls=tool_calls),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=finish_reason,
            model=model,
        )


_EMPTY: dict[str, Any] = {}


def _field(value: Any, name: str | None = None) -> Any:
    """`value[name]` of a JSON object (`value` itself without a name); missing or mistyped parts read as empty."""
    if not isinstance(value, dict):
        return _EMPTY if name is None else None
    return value if name is None else value.get(name)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _usage(value: Any) -> tuple[int | None, int | None]:
    prompt, completion = _field(value, "prompt_tokens"), _field(value, "completion_tokens")
    return (prompt if isinstance(prompt, int) else None, completion if isinstance(completion, int) else None)


async def _post(sdk: openai.AsyncOpenAI, body: bytes) -> Any:
    """POST a prepared body the way `chat.completions.create` does, minus its transform of every field.

    The SDK still sends it (auth, headers, timeout, its `max_retries`) and
    still raises its own errors (`APIStatusError` with status and response
    headers, `APITimeoutError`, `APIConnectionError`), so callers and
    wrappers classify failures exactly as before.
    """
    # `object`: the SDK hands back the parsed JSON as is; building its pydantic models cost more than the request.
    return await sdk.post("/chat/completions", cast_to=object, content=body, options=_REQUEST_OPTIONS)


# What `chat.completions.create` passes: API-key (bearer) auth only.
_REQUEST_OPTIONS: Any = {"security": {"bearer_auth": True}}


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """Decode a tool call's JSON arguments; invalid JSON yields an empty dict."""
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
