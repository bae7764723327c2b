"""A scripted OpenAI-compatible server on loopback, for the real `openai` client.

Each request pops the next scripted `Reply` (or calls the default responder).
Streaming requests get server-sent events with a final usage chunk. With
`window` set, a request whose estimated prompt is larger is refused with 400
and `overflow_message` (a provider's real wording; `{window}` and `{tokens}`
are filled in), like a local server started with a smaller context.
`/v1/embeddings` answers with `embed(text)` per input (default: the synonym-
group vectors of `tests.fakes.embeddings`), or with `embeddings_status`.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.embeddings import concept_vector
from tests.fakes.loopback import serve_loopback


@dataclass
class Reply:
    content: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    error_code: str | None = None
    error_type: str | None = None
    raw_body: str | None = None  # sent as-is (e.g. an nginx HTML 413)
    prompt_tokens: int | None = None  # None: estimated from the request size
    completion_tokens: int = 5
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0  # to provoke client timeouts
    chunk_delay_seconds: float = 0.0  # between streamed content chunks: a reply that streams for a while
    chunk_chars: int = 8  # characters of content per streamed chunk
    gate: asyncio.Event | None = None  # reply only once set: lets a test hold a turn open
    # Streaming: the content streams up to its last chunk, which waits until this is set (a reply held mid-stream).
    hold_last_chunk: asyncio.Event | None = None
    empty_choices: bool = False
    reasoning: str | None = None  # sent as `reasoning_content` (deltas when streaming), like vLLM and DeepSeek


Responder = Callable[[dict[str, Any]], Reply]


def echo_responder(request: dict[str, Any]) -> Reply:
    """Default: answer with the text of the last user message."""
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            return Reply(content=f"echo: {text}")
    return Reply(content="echo: (nothing)")


def _estimate_prompt_tokens(request: dict[str, Any], *, count_tools: bool = False) -> int:
    counted = [request.get("messages", []), request.get("tools", [])] if count_tools else request.get("messages", [])
    return max(1, len(json.dumps(counted)) // 4)


class FakeOpenAI:
    """Use as `async with FakeOpenAI() as fake:`; `fake.base_url` ends in /v1."""

    def __init__(self, responder: Responder = echo_responder) -> None:
        self.script: deque[Reply | Responder] = deque()
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self._runner: web.AppRunner | None = None
        self.port = 0
        # /audio/transcriptions: each upload is kept (model, file name, bytes); the answer is `transcript`.
        self.transcriptions: list[tuple[str, str, bytes]] = []
        self.transcript = "hello from a voice note"
        self.transcription_status = 200
        self._arrived = asyncio.Condition()
        self.window: int | None = None
        self.overflow_message = (
            "This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} "
            "tokens. Please reduce the length of the messages."
        )
        self.overflow_body: dict[str, Any] = {}  # extra error fields (llama.cpp's n_ctx)
        # /embeddings: each request is kept; a status other than 200 is answered as an error.
        self.embed: Callable[[str], list[float]] = concept_vector
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_headers: list[dict[str, str]] = []
        self.embeddings_status = 200
        self.embeddings_delay_seconds = 0.0
        self._closing = asyncio.Event()  # set on exit: a held /embeddings answer ends then, not after its delay
        self.overflows = 0
        self.count_tools = False  # True: the tool schemas count against the window too, as real providers count them

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def wait_for_request(self, count: int = 1, *, timeout: float = 10.0) -> dict[str, Any]:
        """Wait until `count` chat requests arrived; returns the `count`-th."""
        async with asyncio.timeout(timeout):
            async with self._arrived:
                await self._arrived.wait_for(lambda: len(self.requests) >= count)
        return self.requests[count - 1]

    def push(self, *replies: Reply | Responder) -> None:
        self.script.extend(replies)

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner, self.port = await serve_loopback(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _slow(self, seconds: float) -> None:
        """The endpoint's slowness (a client's timeout is under test), cut short when the fake closes: a held
        answer would otherwise keep the server's cleanup waiting for the rest of its delay."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._closing.wait()

    def _next_reply(self, request: dict[str, Any]) -> Reply:
        if self.script:
            item = self.script.popleft()
            return item if isinstance(item, Reply) else item(request)
        return self.responder(request)

    async def _transcriptions(self, http_request: web.Request) -> web.StreamResponse:
        """The multipart upload the `openai` client sends: fields `model` and `file`."""
        form = await http_request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            return web.json_response({"error": {"message": "file is required"}}, status=400)
        self.transcriptions.append((str(form.get("model")), upload.filename, upload.file.read()))
        if self.transcription_status != 200:
            return web.json_response({"error": {"message": "scripted error"}}, status=self.transcription_status)
        return web.json_response({"text": self.transcript})

    async def _embeddings(self, http_request: web.Request) -> web.StreamResponse:
        request = await http_request.json()
        self.embedding_requests.append(request)
        self.embedding_headers.append(dict(http_request.headers))
        if self.embeddings_delay_seconds:
            await self._slow(self.embeddings_delay_seconds)
        if self.embeddings_status != 200:
            return web.json_response({"error": {"message": "scripted error"}}, status=self.embeddings_status)
        inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
        data = []
        for index, text in enumerate(inputs):
            vector = self.embed(str(text))
            packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            embedding = packed if request.get("encoding_format") == "base64" else vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        usage = {"prompt_tokens": sum(len(str(t)) // 4 for t in inputs), "total_tokens": 0}
        return web.json_response({"object": "list", "model": request.get("model"), "data": data, "usage": usage})

    async def _completions(self, http_request: web.Request) -> web.StreamResponse:
        request = await http_request.json()
        self.requests.append(request)
        self.request_headers.append(dict(http_request.headers))
        async with self._arrived:
            self._arrived.notify_all()
        tokens = _estimate_prompt_tokens(request, count_tools=self.count_tools)
        if self.window is not None and tokens > self.window:
            self.overflows += 1
            text = self.overflow_message.format(window=self.window, tokens=tokens)
            error = {"message": text, "type": "invalid_request_error", "code": None, **self.overflow_body}
            return web.json_response({"error": error}, status=400)
        reply = self._next_reply(request)
        if reply.gate is not None:
            await reply.gate.wait()
        if reply.delay_seconds:
            await self._slow(reply.delay_seconds)
        if reply.raw_body is not None:
            return web.Response(status=reply.status, text=reply.raw_body, headers=reply.headers, content_type="text/html")
        if reply.status != 200:
            error = {"message": "scripted error", "type": reply.error_type or "invalid_request_error", "code": reply.error_code}
            return web.json_response({"error": error}, status=reply.status, headers=reply.headers)
        usage = {
            "prompt_tokens": reply.prompt_tokens if reply.prompt_tokens is not None else _estimate_prompt_tokens(request),
            "completion_tokens": reply.completion_tokens,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if request.get("stream"):
            return await self._stream(http_request, request, reply, usage)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        choices = [] if reply.empty_choices else [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
        ]
        body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": request.get("model", "fake"),
                "choices": choices, "usage": usage}
        return web.json_response(body, headers=reply.headers)

    async def _stream(
        self, http_request: web.Request, request: dict[str, Any], reply: Reply, usage: dict[str, int]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", **reply.headers})
        await response.prepare(http_request)
        model = request.get("model", "fake")

        async def send(choices: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
            chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                     "choices": choices, **(extra or {})}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        thought = reply.reasoning or ""
        for start in range(0, len(thought), 8):
            await send([{"index": 0, "delta": {"reasoning_content": thought[start:start + 8]}, "finish_reason": None}])
        text = reply.content or ""
        step = max(1, reply.chunk_chars)
        for start in range(0, len(text), step):
            if start and reply.chunk_delay_seconds:
                await asyncio.sleep(reply.chunk_delay_seconds)  # the model's pace, not synchronisation
            if start + step >= len(text) and reply.hold_last_chunk is not None:
                await reply.hold_last_chunk.wait()
            await send([{"index": 0, "delta": {"content": text[start:start + step]}, "finish_reason": None}])
        for index, call in enumerate(reply.tool_calls or []):
            await send([{"index": 0, "delta": {"tool_calls": [{"index": index, **call}]}, "finish_reason": None}])
        await send([{"index": 0, "delta": {}, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}])
        await send([], {"usage": usage})
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
