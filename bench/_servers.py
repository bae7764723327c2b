"""Servers for the gateway benchmark, each in a child process of its own.

A server measured in its own process has its CPU time read cleanly (the
websocket clients and the fake model run elsewhere), so "CPU per message" is
the server's alone. Each child serves on 127.0.0.1:0, reports its port, then
answers `cpu` (its process CPU seconds, all threads) until `stop`.

Kinds: `echo` (a plain aiohttp websocket echo, the anchor), `openai` (the
loopback fake OpenAI server of the tests, streaming), `gateway` (the Chorus
gateway on its embedded defaults with the instant model, or with the real
`OpenAIModelClient` when given a model URL).
"""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

START_TIMEOUT_SECONDS = 120.0


class InstantModel:
    """A `ModelClient` that answers at once: "echo: <last user text>"."""

    model = "instant"

    async def complete(self, messages: Sequence[Any], *, tools: Sequence[Any] = (), max_tokens: int | None = None,
                       on_text: Any = None) -> Any:
        from agent.messages import Message
        from agent.model_client import Completion

        text = f"echo: {messages[-1].text}"
        if on_text is not None:
            await on_text(text)
        return Completion(Message(role="assistant", content=text), 100 + len(messages), 5, "stop", self.model)

    async def close(self) -> None:
        return None


class DelayedModel:
    """A `ModelClient` with a model's pace: "echo: <last user text>" streamed in a few pieces after `delay` seconds.

    Records, per user text, the monotonic time of the request and of the last token (`timings`): the bench reads them
    beside its own send and receive times (`time.perf_counter` is the system-wide monotonic clock on Linux).
    """

    model = "delayed"
    PIECES = 4

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.timings: dict[str, tuple[float, float]] = {}

    async def complete(self, messages: Sequence[Any], *, tools: Sequence[Any] = (), max_tokens: int | None = None,
                       on_text: Any = None) -> Any:
        from agent.messages import Message
        from agent.model_client import Completion

        asked = time.perf_counter()
        user = messages[-1].text
        text = f"echo: {user}"
        await asyncio.sleep(self.delay)
        step = max(1, len(text) // self.PIECES)
        pieces = [text[at:at + step] for at in range(0, len(text), step)]
        for index, piece in enumerate(pieces):
            if index == len(pieces) - 1:
                self.timings[user] = (asked, time.perf_counter())  # the last token, before it is handed on
            if on_text is not None:
                await on_text(piece)
        return Completion(Message(role="assistant", content=text), 100 + len(messages), 5, "stop", self.model)

    async def close(self) -> None:
        return None


def _rss_bytes() -> tuple[int, int]:
    """This process's resident set size and its peak (VmRSS, VmHWM), in bytes."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


async def _echo() -> tuple[Any, int]:
    import aiohttp
    from aiohttp import web

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "hello", "chat_id": request.query.get("chat", "")})
        async for frame in ws:
            if frame.type == aiohttp.WSMsgType.TEXT:
                data: dict[str, Any] = frame.json()
                await ws.send_json({"type": "message", "id": "1", "text": f"echo: {data['text']}"})
        return ws

    app = web.Application()
    app.router.add_get("/ws", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner.cleanup, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


async def _fake_openai() -> tuple[Any, int]:
    from tests.fakes.openai_server import FakeOpenAI

    fake = FakeOpenAI()
    await fake.__aenter__()
    fake.requests = _Discard()  # a long run would otherwise keep every request body

    async def stop() -> None:
        await fake.__aexit__(None, None, None)

    return stop, fake.port


class _Discard(list[Any]):
    def append(self, item: Any) -> None:
        return None


async def _gateway(home: str, model_url: str | None, store_url: str | None = None,
                   model_client: Any = None) -> tuple[Any, int]:
    from adapters.web import WebAdapter
    from gateway.build import build_gateway
    from gateway.config import parse_config
    from gateway.ops.heap import settle_heap

    # A window no run fills: a long one-chat run (2,000 turns are ~100k tokens) would otherwise compress, and the
    # instant model has no summary to give, so the figures would be of failing compressions, not of messages.
    model: dict[str, Any] = {"name": "instant", "context_length": 10_000_000}
    if model_url:
        model = {"name": "fake-model", "base_url": model_url, "api_key": "sk-bench"}
    config = parse_config(
        {
            "home": home,
            "model": model,
            "platforms": {"web": {"port": 0}},
            "memory": {"nudge_interval": 0, "flush_min_turns": 0},
            "gateway": {"agent_cache_size": 2048},
            "logging": {"level": "warning"},
            **({"store": {"url": store_url}} if store_url else {}),
        },
        env={},
    )
    gateway = build_gateway(config, model=None if model_url else model_client or InstantModel())
    await gateway.start()
    settle_heap()  # as `chorus run` does once the gateway is up
    adapter = gateway.parts.adapters["web"]
    assert isinstance(adapter, WebAdapter)
    return gateway.stop, adapter.port


async def _serve(conn: Connection, kind: str, home: str, model_url: str | None, store_url: str | None,
                 model_delay: float | None = None) -> None:
    import structlog

    if kind == "gateway":  # the production pipeline, as `chorus run` configures it: its per-message cost counts
        from gateway.ops.logs import configure_logging

        configure_logging(level="warning")
    else:
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    delayed: DelayedModel | None = None
    if kind == "echo":
        stop, port = await _echo()
    elif kind == "openai":
        stop, port = await _fake_openai()
    else:
        delayed = DelayedModel(model_delay) if model_delay is not None else None
        stop, port = await _gateway(home, model_url, store_url, delayed)
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()

    def control() -> None:  # a blocking reader thread: waiting costs no CPU
        while True:
            command = conn.recv()
            if command == "cpu":
                conn.send(time.process_time())
            elif command == "rss":
                conn.send(_rss_bytes())
            elif command == "timings":  # taken whole (each entry is written before its reply leaves)
                timings: dict[str, tuple[float, float]] = {}
                if delayed is not None:
                    timings, delayed.timings = delayed.timings, {}
                conn.send(timings)
            else:
                loop.call_soon_threadsafe(stopping.set)
                return

    threading.Thread(target=control, daemon=True).start()
    conn.send(port)
    await stopping.wait()
    await stop()
    conn.send("stopped")


def _child(conn: Connection, kind: str, home: str, model_url: str | None, store_url: str | None,
           model_delay: float | None) -> None:
    asyncio.run(_serve(conn, kind, home, model_url, store_url, model_delay))


@dataclass
class ServerProcess:
    """A started child server: `port`, `cpu()` and `stop()`."""

    kind: str
    process: Any
    conn: Connection
    port: int

    def cpu(self) -> float:
        self.conn.send("cpu")
        value: float = self.conn.recv()
        return value

    def rss(self) -> tuple[int, int]:
        """The child's resident set size and its peak so far, in bytes."""
        self.conn.send("rss")
        value: tuple[int, int] = self.conn.recv()
        return value

    def timings(self) -> dict[str, tuple[float, float]]:
        """The delayed model's (request, last token) monotonic times per user text since the last call."""
        self.conn.send("timings")
        value: dict[str, tuple[float, float]] = self.conn.recv()
        return value

    def stop(self) -> None:
        self.conn.send("stop")
        if self.conn.poll(START_TIMEOUT_SECONDS):
            self.conn.recv()
        self.process.join(START_TIMEOUT_SECONDS)


def start_server(
    kind: str, *, home: str = "", model_url: str | None = None, store_url: str | None = None,
    model_delay: float | None = None,
) -> ServerProcess:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_child, args=(child, kind, home, model_url, store_url, model_delay),
                               daemon=True)
    process.start()
    if not parent.poll(START_TIMEOUT_SECONDS):
        process.kill()
        raise RuntimeError(f"the {kind} server did not start within {START_TIMEOUT_SECONDS:.0f} s")
    return ServerProcess(kind, process, parent, int(parent.recv()))
