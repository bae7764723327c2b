"""One MCP server connection on the official SDK: stdio or streamable HTTP, kept up with restarts and backoff.

Owns `McpConnection` (symmetric `start()`/`stop()`; the constructor only
assigns), `ListedTool` and `ServerStatus`. A runner task owns the SDK's
transport and `ClientSession` (anyio contexts must be entered and left in one
task); tool calls from any task go through that session. A server that exits,
closes its stream or stops answering pings is marked down, its tools vanish
from `tools`, and it is restarted after a backoff that doubles up to
`MAX_BACKOFF` (reset once a session stayed up `STABLE_AFTER` seconds). Knows
nothing of chats, models or gateways.
"""
from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import IO, Any, Literal, Self, TextIO, cast

import anyio
import structlog
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from agent.settings import McpServerSettings
from chorus_errors import ChorusError

log = structlog.get_logger(__name__)

CONNECT_TIMEOUT = 20.0
PING_INTERVAL = 10.0
PING_TIMEOUT = 5.0
STOP_TIMEOUT = 5.0
INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 60.0
STABLE_AFTER = 30.0
ERROR_CHARS = 300
# The SDK's default (1 MiB) fails a 1 MB result outright; results are cut to `mcp.max_result_chars` after arrival.
MAX_SSE_EVENT_BYTES = 32 * 1024 * 1024

State = Literal["starting", "up", "down", "stopped"]
Transport = Literal["stdio", "http"]
Streams = tuple[Any, Any]


class McpUnavailable(ChorusError):
    """The server is not connected right now (starting, down and waiting for a restart, or stopped)."""

    def __init__(self, server: str, state: State) -> None:
        super().__init__(f"MCP server {server} is {state}")
        self.server = server
        self.state = state


class _ServerGone(ChorusError):
    """The session ended without a stop: the server exited, closed its stream or stopped answering."""


@dataclass(frozen=True, slots=True)
class ListedTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    transport: Transport
    state: State
    tools: tuple[str, ...]
    error: str | None
    restarts: int


@dataclass(frozen=True, slots=True)
class Backoff:
    initial: float = INITIAL_BACKOFF
    maximum: float = MAX_BACKOFF
    stable_after: float = STABLE_AFTER

    def delay(self, failures: int) -> float:
        return float(min(self.maximum, self.initial * 2 ** min(failures, 30)))


class _Watched:
    """The transport's read stream, setting `closed` when the server ends it (exit, crash, HTTP teardown)."""

    def __init__(self, inner: Any, closed: asyncio.Event) -> None:
        self._inner = inner
        self._closed = closed

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def describe_failure(exc: BaseException) -> str:
    """A one-line reason for a failed connection (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, _ServerGone):
        return str(exc)[: ERROR_CHARS * 2]
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the command: {exc.strerror or 'not found'}: {exc.filename}"
    if isinstance(exc, TimeoutError):
        return "timed out while connecting (no answer to initialize or tools/list)"
    if isinstance(exc, MCPError):
        return f"server error {exc.code}: {exc.message}"[:ERROR_CHARS]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}"[:ERROR_CHARS] if text else type(exc).__name__


def _stderr_tail(errlog: IO[str] | None) -> str:
    """The last line the server wrote to stderr (why it exited, usually)."""
    if errlog is None:
        return ""
    with contextlib.suppress(OSError, ValueError):
        errlog.flush()
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read()[-4096:].splitlines() if line.strip()]
        return lines[-1][:ERROR_CHARS] if lines else ""
    return ""


class McpConnection:
    """One configured MCP server.

    Args:
        name: the server's key under `mcp.servers`.
        settings: `command` (stdio) or `url` (streamable HTTP) and their options.
        connect_timeout: seconds for initialize plus tools/list.
        ping_interval: seconds between health pings of a connected server.
        backoff: restart delays.
    """

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        ping_interval: float = PING_INTERVAL,
        backoff: Backoff = Backoff(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._settings = settings
        self._connect_timeout = connect_timeout
        self._ping_interval = ping_interval
        self._backoff = backoff
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._attempted = asyncio.Event()
        self._session: ClientSession | None = None
        self._tools: tuple[ListedTool, ...] = ()
        self._state: State = "stopped"
        self._error: str | None = None
        self.restarts = 0
        self.version = 0  # changes whenever the tool list does

    @property
    def transport(self) -> Transport:
        return "stdio" if self._settings.command else "http"

    @property
    def state(self) -> State:
        return self._state

    @property
    def tools(self) -> tuple[ListedTool, ...]:
        """The tools to offer now: none unless the server is up."""
        return self._tools if self._state == "up" else ()

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.name, transport=self.transport, state=self._state,
            tools=tuple(tool.name for tool in self._tools), error=self._error, restarts=self.restarts,
        )

    async def start(self, *, wait: float | None = None) -> None:
        """Start the runner and wait (bounded) for the first connection attempt to succeed or fail."""
        if self._task is not None:
            raise RuntimeError(f"MCP server {self.name} is already started; call stop() first")
        self._stop, self._attempted = asyncio.Event(), asyncio.Event()
        self._state, self._error = "starting", None
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait if wait is not None else self._connect_timeout + 5):
                await self._attempted.wait()

    async def stop(self) -> None:
        """Close the session and the server (a stdio process is ended); repeatable."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        self._lost.set()
        done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._session, self._tools, self._state = None, (), "stopped"
        self.version += 1

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float) -> types.CallToolResult:
        """Call a tool; raises `McpUnavailable`, `TimeoutError` or `MCPError`."""
        session = self._session
        if session is None or self._state != "up":
            raise McpUnavailable(self.name, self._state)
        try:
            async with asyncio.timeout(timeout):
                return await session.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lost.set()  # the runner notices at once instead of at the next ping
            raise

    async def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            began = self._clock()
            try:
                await self._session_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a server failure is reported and retried, never raised
                self._error = describe_failure(exc)
            finally:
                self._session, self._tools = None, ()
                self.version += 1
            self._attempted.set()
            if self._stop.is_set():
                break
            failures = 0 if self._clock() - began >= self._backoff.stable_after else failures
            delay = self._backoff.delay(failures)
            failures += 1
            self._state = "down"
            log.warning("mcp.server_down", server=self.name, error=self._error, retry_in=delay)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):  # the restart backoff timer
                    await self._stop.wait()
            if not self._stop.is_set():
                self.restarts += 1
                self._state = "starting"
        self._state = "stopped"

    async def _session_once(self) -> None:
        self._lost = lost = asyncio.Event()
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as raw_errlog:
            errlog = cast(TextIO, raw_errlog)
            try:
                async with self._open(errlog) as (read, write), ClientSession(_Watched(read, lost), write) as session:
                    with anyio.fail_after(self._connect_timeout):
                        await session.initialize()
                        tools = await _list_tools(session)
                    self._session, self._tools, self._state, self._error = session, tools, "up", None
                    self.version += 1
                    log.info("mcp.server_up", server=self.name, tools=len(tools), restarts=self.restarts)
                    self._attempted.set()
                    await self._watch(session, lost)
            except Exception as exc:
                if self._stop.is_set():
                    return
                tail = _stderr_tail(errlog)
                raise _ServerGone(f"{describe_failure(exc)}" + (f" (stderr: {tail})" if tail else "")) from exc
            if not self._stop.is_set():
                tail = _stderr_tail(errlog)
                raise _ServerGone("the server closed the connection" + (f" (stderr: {tail})" if tail else ""))

    async def _watch(self, session: ClientSession, lost: asyncio.Event) -> None:
        """Return on stop or when the server is gone; a missed ping counts as gone."""
        while not lost.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._ping_interval):  # the health-check timer
                    await lost.wait()
                return
            try:
                with anyio.fail_after(PING_TIMEOUT):
                    await session.send_ping()
            except TimeoutError:
                raise _ServerGone(f"no answer to a ping within {PING_TIMEOUT:g}s") from None

    def _open(self, errlog: TextIO) -> AbstractAsyncContextManager[Streams]:
        settings = self._settings
        if settings.command:
            params = StdioServerParameters(
                command=settings.command[0], args=list(settings.command[1:]), env=dict(settings.env) or None,
                cwd=settings.cwd,
            )
            return stdio_client(params, errlog=errlog)
        return _http(settings.url or "", settings.headers)


@asynccontextmanager
async def _http(url: str, headers: Mapping[str, str]) -> AsyncIterator[Streams]:
    async with create_mcp_http_client(headers=dict(headers)) as client, streamable_http_client(
        url, http_client=client, max_sse_event_size=MAX_SSE_EVENT_BYTES
    ) as (read, write):
        yield read, write


async def _list_tools(session: ClientSession) -> tuple[ListedTool, ...]:
    listed: list[ListedTool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await session.list_tools(params=params)
        for tool in result.tools:
            listed.append(ListedTool(
                name=tool.name, description=tool.description or tool.title or "", input_schema=dict(tool.input_schema)
            ))
        cursor = result.next_cursor
        if not cursor:
            return tuple(listed)


__all__ = ["Backoff", "ListedTool", "McpConnection", "McpUnavailable", "ServerStatus", "describe_failure"]
