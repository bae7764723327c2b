"""A chat-completion event stream read straight off the HTTP response: one `json.loads` per event.

Owns `SseLines` (server-sent-event framing, incremental) and `stream_events`
(the parsed `data:` objects of one response). The SDK's own stream reader
builds a Python object per line and per event and decodes each line apart;
this splits a whole read at once (`bytes.splitlines`) and keeps only `data`
fields, which is all a chat completion sends. Failures look exactly as the
SDK's stream raises them (`APIError` for an error event, `APITimeoutError` /
`APIConnectionError` for a broken read, which `EventSource.read` raises), so
`translate_error` and the retry policy see the same types as before.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import httpx2

_DONE = b"[DONE]"
# `json.loads` of bytes, without its encoding sniffing and type checks on every event (SSE is UTF-8 by definition).
_DECODER = json.JSONDecoder()
_STREAM_ERROR = "An error occurred during streaming"
DRAIN_SECONDS = 1.0


class SseLines:
    """Incremental SSE framing: feed raw reads, get the `data` of each completed event.

    Lines end in LF, CR or CRLF (a CRLF split across two reads counts once);
    `data` lines of one event are joined with LF; comments and the other
    fields (`event`, `id`, `retry`) are dropped.
    """

    def __init__(self) -> None:
        self._tail = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        # Most reads are whole events, each "data: {...}" and a blank line: their data by one split (exact: no CR,
        # nothing pending, and every line break is one of the separators, so no other line or field is there).
        if not self._tail and not self._data and chunk.startswith(b"data: ") and chunk.endswith(b"\n\n"):
            whole = chunk[:-2].split(b"\n\ndata: ")
            if chunk.count(b"\n") == 2 * len(whole) and b"\r" not in chunk:
                whole[0] = whole[0][6:]
                return whole
        buffer = self._tail + chunk if self._tail else chunk
        lines = buffer.splitlines(keepends=True)
        # An unterminated last line, or one ending in CR (its LF may be in the next read), waits for more.
        if lines and not lines[-1].endswith(b"\n"):
            self._tail = lines.pop()
        else:
            self._tail = b""
        events: list[bytes] = []
        for raw in lines:
            self._line(raw.rstrip(b"\r\n"), events)
        return events

    def finish(self) -> list[bytes]:
        """The end of the body: a last event without its blank line still counts (as the SDK reads it)."""
        events: list[bytes] = []
        if self._tail:
            self._line(self._tail.rstrip(b"\r\n"), events)
            self._tail = b""
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                events.append(self._data[0] if len(self._data) == 1 else b"\n".join(self._data))
                self._data = []
            return
        if line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)
        elif line == b"data":
            self._data.append(b"")


class EventSource(Protocol):
    """An open response body (see `agent._stream_request.StreamResponse`)."""

    @property
    def request(self) -> httpx2.Request:
        """The request, as the SDK's errors carry it."""
        ...

    async def read(self) -> bytes | None:
        """The next bytes (None at the end); a broken read raises the SDK's `APITimeoutError` / `APIConnectionError`."""
        ...

    async def aclose(self) -> None: ...


def _error_event(data: Any, response: EventSource) -> Exception | None:
    """The SDK's `APIError` for an object carrying `error` (a provider failing after the stream began)."""
    if not isinstance(data, dict) or not data.get("error"):
        return None
    import openai

    error = data["error"]
    message = error.get("message") if isinstance(error, dict) else None
    return openai.APIError(
        message=message if isinstance(message, str) and message else _STREAM_ERROR, request=response.request, body=error
    )


async def stream_events(response: EventSource) -> AsyncIterator[Any]:
    """The JSON object of each event until `[DONE]`; the response is closed at the end, however it ends."""
    lines = SseLines()
    try:
        while True:
            chunk = await response.read()
            batch = lines.feed(chunk) if chunk is not None else lines.finish()
            for data in batch:
                if data.startswith(_DONE):
                    if chunk is not None:
                        await _drain(response)
                    return
                yield _event(data, response)
            if chunk is None:
                return
    finally:
        await response.aclose()


def _event(data: bytes, response: EventSource) -> Any:
    value = _DECODER.decode(data.decode("utf-8", "surrogatepass"))
    error = _error_event(value, response)
    if error is not None:
        raise error
    return value


async def _drain(response: EventSource) -> None:
    """Read what follows `[DONE]` (bounded), so an HTTP/1.1 connection goes back to the pool."""
    import openai

    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            while await response.read() is not None:
                pass
    except (TimeoutError, openai.APIError):
        pass  # the answer is complete: a slow or broken tail only costs the connection


__all__ = ["DRAIN_SECONDS", "EventSource", "SseLines", "stream_events"]
