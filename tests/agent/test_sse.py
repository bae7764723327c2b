"""The stream reader (`agent._sse`): SSE framing at every split point, and whole streams over a real socket."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest
from aiohttp import web

from agent._sse import SseLines
from agent.messages import user
from agent.model_client import OpenAIModelClient
from chorus_errors import ModelUnavailable
from tests.fakes.loopback import serve_loopback


def _chunk(content: str | None = None, *, usage: dict[str, int] | None = None, finish: str | None = None) -> bytes:
    choices = [] if usage else [{"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}]
    body: dict[str, object] = {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": choices}
    if usage:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


STREAM = (
    b": keep-alive comment\r\n\r\n"
    + _chunk("Hel").replace(b"\n", b"\r\n")
    + b"event: message\r\nid: 7\r\ndata: {\"id\": \"c\", \"model\": \"m\",\r\ndata: \"choices\": [{\"index\": 0, "
      b"\"delta\": {\"content\": \"lo \\u00fc\"}}]}\r\n\r\n"
    + _chunk("✓").replace(b"\n", b"\r")
    + _chunk(finish="stop")
    + _chunk(usage={"prompt_tokens": 11, "completion_tokens": 3})
    + b"data: [DONE]\n\n"
)


def _events(chunks: Sequence[bytes]) -> list[object]:
    lines = SseLines()
    events = [data for chunk in chunks for data in lines.feed(chunk)] + lines.finish()
    return [data if data.startswith(b"[DONE]") else json.loads(data) for data in events]


def test_every_split_point_gives_the_same_events() -> None:
    """LF, CR and CRLF endings, multi-line data, comments and other fields: one read or two, the events are equal."""
    whole = _events([STREAM])
    assert len(whole) == 6 and whole[-1] == b"[DONE]"
    assert whole[1] == {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "lo ü"}}]}
    for cut in range(1, len(STREAM)):
        assert _events([STREAM[:cut], STREAM[cut:]]) == whole, cut


def test_byte_at_a_time_and_a_missing_last_blank_line() -> None:
    """Reads of one byte each; a body ending without the final blank line still yields its last event."""
    body = STREAM[: -len(b"data: [DONE]\n\n")] + b"data: [DONE]"
    assert _events([body[i:i + 1] for i in range(len(body))]) == _events([STREAM])


async def _serve(parts: Sequence[bytes], *, cut: bool = False) -> tuple[web.AppRunner, str]:
    """A chat-completions endpoint writing `parts` as separate writes (and, with `cut`, dropping the connection)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for part in parts:
            await response.write(part)
        if cut:
            assert request.transport is not None
            request.transport.abort()
            return response
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner, port = await serve_loopback(app)
    return runner, f"http://127.0.0.1:{port}/v1"


async def _complete(parts: Sequence[bytes], *, cut: bool = False, turns: int = 1) -> tuple[list[str], list[object]]:
    runner, url = await _serve(parts, cut=cut)
    client = OpenAIModelClient(model="m", base_url=url, api_key="sk-test")
    texts: list[str] = []

    async def sink(text: str) -> None:
        texts.append(text)

    results: list[object] = []
    try:
        for _ in range(turns):
            results.append(await client.complete([user("hi")], on_text=sink))
    finally:
        await client.close()
        await runner.cleanup()
    return texts, results


async def test_stream_split_across_writes_is_read_whole() -> None:
    """Events cut mid-line across writes arrive as text deltas in order; usage and finish reason are kept."""
    parts = [STREAM[i:i + 7] for i in range(0, len(STREAM), 7)]
    texts, results = await _complete(parts, turns=2)  # the second turn reuses the drained connection
    assert texts == ["Hel", "lo ü", "✓"] * 2
    completion = results[0]
    assert (completion.message.content, completion.prompt_tokens, completion.finish_reason) == (  # type: ignore[attr-defined]
        "Hello ü✓", 11, "stop"
    )


@pytest.mark.parametrize("error", [
    {"message": "Overloaded", "type": "overloaded_error"},  # Anthropic-compatible gateways
    {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error"},
    {"code": 502, "message": ""},  # no wording: the SDK's own default message
])
async def test_error_event_mid_stream_is_a_stream_failure(error: dict[str, object]) -> None:
    """An `error` object after text began raises ModelUnavailable (not retried as a bad request), as the SDK did."""
    parts = [_chunk("partial"), b"data: " + json.dumps({"error": error}).encode() + b"\n\n", _chunk("never")]
    with pytest.raises(ModelUnavailable) as caught:
        await _complete(parts)
    assert str(caught.value) == "model m stream failed"


async def test_connection_dropped_mid_stream_is_a_connection_failure() -> None:
    """The server vanishing after a few events raises ModelUnavailable marked connection, not a parse error."""
    with pytest.raises(ModelUnavailable) as caught:
        await _complete([_chunk("partial"), b"data: {\"choi"], cut=True)
    assert caught.value.connection is True



async def test_a_stream_that_stalls_mid_answer_times_out() -> None:
    """Text began, then nothing for longer than the timeout: ModelUnavailable marked timeout (each read is timed)."""
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_chunk("partial"))
        await release.wait()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner, port = await serve_loopback(app)
    client = OpenAIModelClient(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test", timeout_seconds=0.3)
    texts: list[str] = []

    async def sink(text: str) -> None:
        texts.append(text)

    try:
        with pytest.raises(ModelUnavailable) as caught:
            await client.complete([user("hi")], on_text=sink)
    finally:
        release.set()
        await client.close()
        await runner.cleanup()
    assert texts == ["partial"]
    assert caught.value.timeout is True


@pytest.mark.parametrize("event", [
    b"data: {\"a\": 1}\n\n", b"data:  two spaces\n\n", b"data:\n\n", b"data: \n\n", b"data: [DONE]\n\n",
    b"data: caf\xc3\xa9\n\n", b"data: x\r\n\r\n", b"data: x\n\ndata: y\n\n", b"data: x\nid: 3\n\n", b"event: e\ndata: x\n\n",
    b"data: a\n\ndata: \n\ndata: data: c\n\n", b"data: a\n\n\ndata: b\n\n", b"data: a\n\ndata:b\n\n", b"data: a\ndata: b\n\n",
    b"data: a\n\ndata: b\r\n\r\n", b"data: a\n\n: comment\n\ndata: b\n\n", b"data: a\n\ndata: [DONE]\n\n",
])
def test_whole_events_in_one_read_read_as_split_reads_do(event: bytes) -> None:
    """One read holding whole events (the common case, read by one split) gives what byte-sized reads give, alone
    and after a read that left an event's data pending."""
    assert _raw_events([event]) == _raw_events([event[i:i + 1] for i in range(len(event))])
    pending = b"data: first\n"
    assert _raw_events([pending, event]) == _raw_events([pending + event])


def _raw_events(chunks: Sequence[bytes]) -> list[bytes]:
    lines = SseLines()
    return [data for chunk in chunks for data in lines.feed(chunk)] + lines.finish()
