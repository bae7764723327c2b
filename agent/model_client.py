"""The model client: one chat-completion call through the `openai` SDK, errors translated.

Owns `ModelClient` (the Protocol the loop and the summariser depend on),
`Completion`, and `OpenAIModelClient`. SDK retries are off: callers decide
retries and fallbacks from the typed errors, so one 429 never stalls a turn.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import openai

from agent.messages import Message, ToolCall, ToolSchema, messages_to_wire
from agent.provider_limits import is_overflow_text, stated_limit
from chorus_errors import (
    ContextOverflow,
    ModelAuthError,
    ModelError,
    ModelNotConfigured,
    ModelUnavailable,
    RateLimited,
)

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

    def _sdk(self) -> openai.AsyncOpenAI:
        if not self.model:
            raise ModelNotConfigured("no model configured: set model.name (and model.base_url, model.api_key)")
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                base_url=self._base_url, api_key=self._api_key or "unset", max_retries=0, timeout=self._timeout
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        sdk = self._sdk()
        request: dict[str, Any] = {"model": self.model, "messages": messages_to_wire(messages)}
        if tools:
            request["tools"] = [tool.to_wire() for tool in tools]
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        try:
            if on_text is None:
                return self._from_response(await sdk.chat.completions.create(**request))
            return await self._stream(sdk, request, on_text)
        except openai.OpenAIError as exc:
            raise translate_error(exc, self.model) from None

    def _from_response(self, response: Any) -> Completion:
        if not response.choices:
            raise ModelUnavailable(f"model {self.model} returned no choices", model=self.model)
        choice = response.choices[0]
        raw = choice.message
        calls = tuple(
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "{}")
            for call in (raw.tool_calls or ())
        )
        usage = response.usage
        return Completion(
            message=Message(role="assistant", content=raw.content, tool_calls=calls),
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            finish_reason=choice.finish_reason,
            model=response.model or self.model,
        )

    async def _stream(self, sdk: openai.AsyncOpenAI, request: dict[str, Any], on_text: TextSink) -> Completion:
        stream = await sdk.chat.completions.create(**request, stream=True, stream_options={"include_usage": True})
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        prompt_tokens = completion_tokens = None
        finish_reason = None
        model = self.model
        async for chunk in stream:
            model = chunk.model or model
            if chunk.usage is not None:
                prompt_tokens, completion_tokens = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            finish_reason = choice.finish_reason or finish_reason
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
                await on_text(delta.content)
            for call in delta.tool_calls or ():
                slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                if call.id:
                    slot["id"] = call.id
                if call.function is not None:
                    slot["name"] += call.function.name or ""
                    slot["arguments"] += call.function.arguments or ""
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


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """Decode a tool call's JSON arguments; invalid JSON yields an empty dict."""
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
