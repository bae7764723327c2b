"""Benchmark of MCP tools in a live session: context kept under the threshold, and the gateway's cost per call.

Part 1, a live session: the real gateway (SQLite under a temporary home, the
built-in compressor, a 32K window) with a real MCP server written with the
SDK (`tests/fakes/mcp_server.py` over stdio) and the fake OpenAI server on
loopback. Each of N user messages makes the model call `docs__big`, whose
result is 20,000 characters of varied prose; the model then answers. Every
request the model receives is counted with the same token counter the
compressor uses, and compared to the compression threshold.

Part 2, cost per call: the same server, the same 20,000-character call, each
call timed twice at once: the raw SDK call inside it (`McpConnection.call`:
session, transport, server) and the whole `McpTool` call around it (schema
check, result rendering, cut, logging). The difference is what Chorus adds.

Run: `.venv/bin/python bench/tools.py [--calls 50] [--chars 20000] [--window 32000]`
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if sys.path[0] != str(ROOT):  # ahead of bench/ (a script's folder), whose gateway.py would shadow the package
    sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402

from agent.messages import messages_from_wire  # noqa: E402
from agent.settings import McpServerSettings  # noqa: E402
from agent.tokens import default_counter  # noqa: E402
from agent.tools.base import ToolContext  # noqa: E402
from agent.tools.mcp import CallLimits, McpConnection, McpTool  # noqa: E402
from gateway.build import build_gateway  # noqa: E402
from gateway.config import parse_config  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, Reply  # noqa: E402
from tests.gateway.fake_platform import FakePlatform  # noqa: E402

SERVER = [sys.executable, str(ROOT / "tests" / "fakes" / "mcp_server.py")]
PROSE = (
    "Release {n}: the deploy of service {n} moved the queue workers to the new cluster; latency fell by {n} ms, "
    "error budget held, and the on-call rotation noted two alerts about disk pressure on node-{n}. "
)
SUMMARY = "## Goal\nRead the release notes one by one.\n## Completed actions\nNotes were read and acknowledged."
COUNTER = default_counter()


def _tokens(request: dict[str, Any]) -> int:
    messages = messages_from_wire(request["messages"])
    return COUNTER.count_messages(messages) + COUNTER.count_text(json.dumps(request.get("tools", [])))


def _responder(chars: int) -> Any:
    def respond(request: dict[str, Any]) -> Reply:
        tokens = _tokens(request)
        if "tools" not in request:
            return Reply(content=SUMMARY, prompt_tokens=tokens)  # the compressor's summary request
        last = request["messages"][-1]
        if last["role"] == "user":
            n = last["content"].rsplit(" ", 1)[-1]
            args = {"chars": chars, "seed": PROSE.format(n=n)}
            call = {"id": f"call-{n}", "type": "function", "function": {"name": "docs__big", "arguments": json.dumps(args)}}
            return Reply(content=None, tool_calls=[call], prompt_tokens=tokens)
        n = str(last.get("tool_call_id", "call-?")).removeprefix("call-")
        return Reply(content=f"done {n}: read {len(last['content']):,} chars", prompt_tokens=tokens)

    return respond


async def live_session(calls: int, chars: int, window: int) -> dict[str, Any]:
    async with FakeOpenAI(_responder(chars)) as fake:
        with tempfile.TemporaryDirectory() as home:
            config = parse_config({
                "home": home,
                "model": {"name": "fake-model", "base_url": fake.base_url, "api_key": "sk-bench", "context_length": window},
                "platforms": {"web": {"enabled": False}, "telegram": {"allow_all_users": True}},
                # Background reviews would add their own model requests: off, so every request is the session's.
                "memory": {"nudge_interval": 0, "flush_min_turns": 0},
                "skills": {"creation_nudge_interval": 0},
                "mcp": {"servers": {"docs": {"command": SERVER}}},
                "tool_progress": {"dms": "off"},
            }, env={})
            chat = FakePlatform("telegram")
            gateway = build_gateway(config, adapters={"telegram": chat})
            await gateway.start()
            try:
                for n in range(1, calls + 1):
                    await chat.inject(f"read release {n}")
                    await chat.wait_final(f"done {n}:", timeout=120)
                agent = gateway.parts.agents.live_agents()[0][1]
                threshold = agent.engine.threshold_tokens
                compressions = agent.engine.state.compression_count
            finally:
                await gateway.stop()
        sent = [_tokens(r) for r in fake.requests if "tools" in r]
        tool_calls = sum(1 for r in fake.requests if "tools" in r and r["messages"][-1]["role"] == "tool")
    return {
        "tool_calls": tool_calls, "requests": len(sent), "threshold": threshold, "max_request_tokens": max(sent),
        "over_threshold": sum(1 for t in sent if t > threshold), "compressions": compressions,
        "summaries": sum(1 for r in fake.requests if "tools" not in r),
    }


class _Timed:
    """The connection, timing each raw SDK call made inside `McpTool` (so the difference is exactly Chorus's)."""

    def __init__(self, connection: McpConnection) -> None:
        self.name = connection.name
        self._connection = connection
        self.last_ms = 0.0

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float) -> Any:
        started = time.perf_counter()
        try:
            return await self._connection.call(tool, arguments, timeout=timeout)
        finally:
            self.last_ms = (time.perf_counter() - started) * 1000


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


async def call_cost(calls: int, chars: int) -> dict[str, float]:
    connection = McpConnection("docs", McpServerSettings(command=SERVER))
    await connection.start()
    try:
        (listed,) = [t for t in connection.tools if t.name == "big"]
        timed = _Timed(connection)
        tool = McpTool(target=timed, listed=listed, limits=CallLimits(timeout_seconds=60, max_result_chars=100_000))
        context = ToolContext(chat_id="bench:1", session_id="bench")
        raw: list[float] = []
        total: list[float] = []
        for n in range(calls):
            started = time.perf_counter()
            await tool({"chars": chars, "seed": PROSE.format(n=n)}, context)
            total.append((time.perf_counter() - started) * 1000)
            raw.append(timed.last_ms)
    finally:
        await connection.stop()
    added = [t - r for t, r in zip(total, raw)]
    return {"raw_ms": statistics.median(raw), "raw_p95_ms": _p95(raw), "tool_ms": statistics.median(total),
            "tool_p95_ms": _p95(total), "added_ms": statistics.median(added), "added_p95_ms": _p95(added)}


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--chars", type=int, default=20_000)
    parser.add_argument("--window", type=int, default=32_000)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    session = await live_session(args.calls, args.chars, args.window)
    print(f"live session: {session['tool_calls']} tool calls of {args.chars:,} chars at a {args.window:,}-token window")
    print(f"  model requests: {session['requests']}, compression threshold: {session['threshold']:,} tokens")
    print(f"  largest request: {session['max_request_tokens']:,} tokens; requests over the threshold: "
          f"{session['over_threshold']}")
    print(f"  compressions: {session['compressions']} ({session['summaries']} summary requests)")
    cost = await call_cost(args.calls, args.chars)
    print(f"cost per call ({args.calls} calls of {args.chars:,} chars, stdio, median / p95):")
    print(f"  raw MCP call (SDK session + transport + server): {cost['raw_ms']:.2f} / {cost['raw_p95_ms']:.2f} ms")
    print(f"  through McpTool (schema check, render, cut, log): {cost['tool_ms']:.2f} / {cost['tool_p95_ms']:.2f} ms")
    print(f"  gateway-added per call: {cost['added_ms']:.3f} / {cost['added_p95_ms']:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
