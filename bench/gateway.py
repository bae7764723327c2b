"""Benchmark of the gateway's own cost: messages/s and p50/p99 gateway-added latency.

The gateway runs on its embedded defaults (SQLite under a temporary home,
in-process coordination, the web adapter on loopback) with an instant
in-process model, so every millisecond measured is the gateway's: websocket
intake, de-duplication, allowlist/routing/triggers, the journal, the session
lock, the agent, the session store, the outbox and the reply frame. Clients
are websocket chats (one per active chat) that each send a message and wait
for its reply before the next. The same clients, in the same run, measure a
plain aiohttp websocket echo server; the ratio of the two is the figure.

Run: `.venv/bin/python bench/gateway.py [--chats 1,100,1000] [--messages 400]`
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import structlog  # noqa: E402
from aiohttp import web  # noqa: E402

from adapters.web import WebAdapter  # noqa: E402
from agent.messages import Message, ToolSchema  # noqa: E402
from agent.model_client import Completion, TextSink  # noqa: E402
from gateway.build import build_gateway  # noqa: E402
from gateway.config import parse_config  # noqa: E402
from gateway.delivery.outbound import STREAM_CURSOR  # noqa: E402


class InstantModel:
    """A `ModelClient` that answers at once: "echo: <last user text>"."""

    model = "instant"

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        text = f"echo: {messages[-1].text}"
        if on_text is not None:
            await on_text(text)
        return Completion(Message(role="assistant", content=text), 100 + len(messages), 5, "stop", self.model)

    async def close(self) -> None:
        return None


@dataclass(frozen=True)
class Result:
    name: str
    chats: int
    messages: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _chat(session: aiohttp.ClientSession, url: str, chat_id: str, count: int, latencies: list[float],
                ready: asyncio.Event, go: asyncio.Event) -> None:
    async with session.ws_connect(f"{url}?chat={chat_id}", max_msg_size=0) as ws:
        ready.set()
        await go.wait()
        for i in range(count):
            text = f"msg {i} from {chat_id}"
            expected = f"echo: {text}"
            started = time.perf_counter()
            await ws.send_json({"type": "message", "text": text, "client_id": f"{chat_id}-{i}"})
            while True:
                frame = await ws.receive_json(timeout=120)
                if frame.get("type") in ("message", "edit") and frame.get("text") == expected:
                    break
                if frame.get("type") == "message" and str(frame.get("text", "")).endswith(STREAM_CURSOR):
                    continue
            latencies.append((time.perf_counter() - started) * 1000)


async def drive(name: str, url: str, chats: int, per_chat: int) -> Result:
    """Connect `chats` clients, then let each send `per_chat` messages one after another."""
    latencies: list[float] = []
    go = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        readies = [asyncio.Event() for _ in range(chats)]
        tasks = [
            asyncio.create_task(_chat(session, url, f"{name[:3]}{chats}c{n}", per_chat, latencies, readies[n], go))
            for n in range(chats)
        ]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 120)
        started = time.perf_counter()
        go.set()
        await asyncio.gather(*tasks)
        seconds = time.perf_counter() - started
    return Result(name, chats, len(latencies), seconds, latencies)


async def echo_server() -> tuple[web.AppRunner, str]:
    """A plain aiohttp websocket server answering each message frame at once, in the web adapter's format."""

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
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/ws"


async def with_gateway(home: Path, body: Callable[[str], Awaitable[list[Result]]]) -> list[Result]:
    config = parse_config(
        {
            "home": str(home),
            "model": {"name": "instant"},
            "platforms": {"web": {"port": 0}},
            "memory": {"nudge_interval": 0, "flush_min_turns": 0},
            "gateway": {"agent_cache_size": 2048},
            "logging": {"level": "warning"},
        },
        env={},
    )
    gateway = build_gateway(config, model=InstantModel())
    await gateway.start()
    try:
        adapter = gateway.parts.adapters["web"]
        assert isinstance(adapter, WebAdapter)
        return await body(f"http://127.0.0.1:{adapter.port}/ws")
    finally:
        await gateway.stop()


def _row(result: Result) -> str:
    return (f"{result.name:8} chats={result.chats:5} messages={result.messages:6} "
            f"rate={result.rate:9.1f} msg/s  p50={result.pct(0.5):8.2f} ms  p99={result.pct(0.99):8.2f} ms")


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", default="1,100,1000", help="comma-separated active chat counts")
    parser.add_argument("--messages", type=int, default=400, help="messages per level (at least one per chat)")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.chats.split(",") if x.strip()]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    echo_runner, echo_url = await echo_server()
    results: list[tuple[Result, Result]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="chorus-bench-") as tmp:

            async def body(url: str) -> list[Result]:
                out: list[Result] = []
                for chats in levels:
                    per_chat = max(1, args.messages // chats)
                    echo = await drive("echo", echo_url, chats, per_chat)
                    gateway = await drive("gateway", url, chats, per_chat)
                    results.append((gateway, echo))
                    print(_row(echo), flush=True)
                    print(_row(gateway), flush=True)
                    print(f"{'ratio':8} chats={chats:5} rate x{gateway.rate / echo.rate:.3f}  "
                          f"p50 x{gateway.pct(0.5) / echo.pct(0.5):.1f}  p99 x{gateway.pct(0.99) / echo.pct(0.99):.1f}  "
                          f"gateway-added p50={gateway.pct(0.5) - echo.pct(0.5):.2f} ms "
                          f"p99={gateway.pct(0.99) - echo.pct(0.99):.2f} ms", flush=True)
                    out.extend((gateway, echo))
                return out

            await with_gateway(Path(tmp), body)
    finally:
        await echo_runner.cleanup()
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

