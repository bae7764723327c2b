"""Benchmark of the gateway's own cost: CPU per message, messages/s and p50/p99 gateway-added latency.

The gateway runs on its embedded defaults (SQLite under a temporary home,
in-process coordination, the web adapter on loopback, logging through the
production pipeline at level warning) in a child process of
its own, so its CPU time is read cleanly: websocket intake, de-duplication,
allowlist/routing/triggers, the journal, the session lock, the agent, the
session store, the outbox and the reply frame. Clients are websocket chats
(one per active chat) that each send a message and wait for its reply before
the next. The same clients, in the same run, measure a plain aiohttp
websocket echo server (also in a child process); the ratios are the figures.

`--model instant` (the default) answers in-process at once. `--model openai`
adds the production path: the gateway with the real `OpenAIModelClient`
streaming from a loopback fake OpenAI server (a third process), at histories
of 10, 100 and 500 messages per chat; and the client alone (`complete()` on
one history, in this process) for its CPU per turn.

`--store postgresql://…` runs the instant levels on a second gateway whose
store (sessions, notes, chats) is that PostgreSQL database, beside SQLite.

`--against DIR` also runs, at each level right after this tree's gateway, the
gateway of another source tree (say a checkout of `main`), and prints this
tree's CPU per message and rate over that one's: a before/after measured side
by side in one run, so a busy machine moves both alike; `--rounds N` repeats
that N times per level, alternating which goes first, and prints the medians.
Without `--against`, `--rounds N` repeats the echo/gateway pair N times per
level the same way, and the median of the per-round ratios is the verdict.

`--waits quick` (1, 100 and 1,000 active chats) or `--waits full` (and 10,000) prints what users wait for instead
(`bench/_latency.py`): the gateway's added latency, inbound message to model request and model's last token to
reply, p50/p99, with the gateway's RSS at each level, against a model answering after `--model-delay` seconds at
about `--rate` messages/s over all chats; then a compression's CPU next to its summary call and `chorus compress`
wall time (`bench/_compress_waits.py`). Targets: p99 <= 50 ms and RSS <= 1 GiB at 10,000 chats.

Run: `.venv/bin/python bench/gateway.py [--model instant|openai] [--chats 1,100,1000] [--messages 400] [--store URL]
[--against DIR] [--rounds N] [--waits quick|full [--model-delay S] [--rate R]]`
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Ahead of bench/ (this script's folder), whose gateway.py would shadow the package; only when run as the
# script: a spawned server child re-runs this file as `__mp_main__` with the path it was given (`_start_from`
# puts the other tree first), and putting this tree back in front made `--against` measure this tree twice.
if __name__ == "__main__" and sys.path[0] != str(ROOT):
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench._servers import ServerProcess, start_server  # noqa: E402

TARGET_CPU_X_ECHO = 5.0
TARGET_RATE_RATIO = 0.3
TARGET_CLIENT_MS_AT_100 = 3.0
HISTORIES = (10, 100, 500)
PAD = " lorem ipsum dolor sit amet"  # user texts of ~100 characters, like a chat line


@dataclass(frozen=True)
class Result:
    name: str
    chats: int
    messages: int
    seconds: float
    cpu_seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu_seconds / self.messages * 1e6

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _text(chat_id: str, i: int) -> str:
    return f"msg {i} from {chat_id}" + PAD * 3


async def _turn(ws: aiohttp.ClientWebSocketResponse, text: str, client_id: str) -> None:
    expected = f"echo: {text}"
    await ws.send_json({"type": "message", "text": text, "client_id": client_id})
    while True:
        frame = await ws.receive_json(timeout=120)
        if frame.get("type") in ("message", "edit") and frame.get("text") == expected:
            return


async def _chat(session: aiohttp.ClientSession, url: str, chat_id: str, count: int, warmup: int,
                latencies: list[float], ready: asyncio.Event, go: asyncio.Event) -> None:
    async with session.ws_connect(f"{url}?chat={chat_id}", max_msg_size=0) as ws:
        for i in range(warmup):  # grows the chat's history before the measured turns
            await _turn(ws, _text(chat_id, i), f"{chat_id}-w{i}")
        ready.set()
        await go.wait()
        for i in range(count):
            started = time.perf_counter()
            await _turn(ws, _text(chat_id, i), f"{chat_id}-{i}")
            latencies.append((time.perf_counter() - started) * 1000)


async def drive(name: str, server: ServerProcess, chats: int, per_chat: int, *, warmup: int = 0, tag: str = "") -> Result:
    """Connect `chats` clients (each first sends `warmup` messages), then each sends `per_chat` one after another."""
    url = f"http://127.0.0.1:{server.port}/ws"
    latencies: list[float] = []
    go = asyncio.Event()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        readies = [asyncio.Event() for _ in range(chats)]
        tasks = [
            asyncio.create_task(_chat(session, url, f"{name[:3]}{tag}{chats}c{n}", per_chat, warmup, latencies,
                                      readies[n], go))
            for n in range(chats)
        ]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 600)
        cpu_before = server.cpu()
        started = time.perf_counter()
        go.set()
        await asyncio.gather(*tasks)
        seconds = time.perf_counter() - started
        cpu = server.cpu() - cpu_before
    return Result(name, chats, len(latencies), seconds, cpu, latencies)


def _row(result: Result) -> str:
    return (f"{result.name:8} chats={result.chats:5} messages={result.messages:6} "
            f"rate={result.rate:9.1f} msg/s  cpu={result.cpu_us:8.0f} µs/msg  "
            f"p50={result.pct(0.5):8.2f} ms  p99={result.pct(0.99):8.2f} ms")


def _ratio(gateway: Result, echo: Result, label: str) -> str:
    cpu_x, rate_x = gateway.cpu_us / echo.cpu_us, gateway.rate / echo.rate
    ok = "MET" if cpu_x <= TARGET_CPU_X_ECHO and rate_x >= TARGET_RATE_RATIO else "MISSED"
    return (f"{'ratio':8} {label:>11} cpu x{cpu_x:.1f} (target <= {TARGET_CPU_X_ECHO:.0f}x)  "
            f"rate x{rate_x:.3f} (target >= {TARGET_RATE_RATIO})  "
            f"gateway-added p50={gateway.pct(0.5) - echo.pct(0.5):.2f} ms p99={gateway.pct(0.99) - echo.pct(0.99):.2f} ms"
            f"  [{ok} for the instant model]")


def _start_from(tree: Path, home: str) -> ServerProcess:
    """A gateway child that imports the source tree `tree` (its path first: the child inherits `sys.path`)."""
    sys.path.insert(0, str(tree))
    try:
        return start_server("gateway", home=home)
    finally:
        sys.path.remove(str(tree))


async def _alternating(first: ServerProcess, second: ServerProcess, chats: int, per_chat: int, rounds: int, *,
                       names: tuple[str, str], prefix: str, start: int = 0) -> list[tuple[Result, Result]]:
    """(first's, second's) result of each round from `start`, the odd rounds run second first."""
    pairs: list[tuple[Result, Result]] = []
    for round_ in range(start, rounds):
        tag = f"{prefix}{round_}" if round_ else ""  # chats of their own: a message id sent again would be dropped
        if round_ % 2:
            later = await drive(names[1], second, chats, per_chat, tag=tag)
            pairs.append((await drive(names[0], first, chats, per_chat, tag=tag), later))
        else:
            earlier = await drive(names[0], first, chats, per_chat, tag=tag)
            pairs.append((earlier, await drive(names[1], second, chats, per_chat, tag=tag)))
    return pairs


def _spread(ratios: list[float], digits: int) -> str:
    """`x<median> [<min>-<max>]` of the ratios."""
    ordered = sorted(ratios)
    return f"x{statistics.median(ordered):.{digits}f} [{ordered[0]:.{digits}f}-{ordered[-1]:.{digits}f}]"


async def _against(gateway: ServerProcess, old: ServerProcess, first: Result, echo: Result, chats: int, per_chat: int,
                   rounds: int) -> None:
    """This tree's gateway over the other's, `rounds` times, each round in the other order: the medians are the figures."""
    old_result = await drive("against", old, chats, per_chat)
    print(_row(old_result), flush=True)
    print(_ratio(old_result, echo, f"chats={chats}").replace("ratio   ", "ratio-ag"), flush=True)
    pairs = [(first, old_result)] + await _alternating(gateway, old, chats, per_chat, rounds,
                                                       names=("gateway", "against"), prefix="r", start=1)
    print(f"{'new/old':9} chats={chats:5} cpu {_spread([n.cpu_us / o.cpu_us for n, o in pairs], 2)}  "
          f"rate {_spread([n.rate / o.rate for n, o in pairs], 2)}  (median [range] of {len(pairs)} rounds)",
          flush=True)


async def _echo_rounds(echo: ServerProcess, gateway: ServerProcess, chats: int, per_chat: int,
                       rounds: int) -> tuple[Result, Result]:
    """Echo and gateway `rounds` times at one level, alternating which goes first; returns the first (echo, gateway).

    A busy machine moves a single run's ratio by a fifth either way; with several rounds the verdict is the
    median of the per-round ratios, each pair measured back to back.
    """
    pairs = await _alternating(echo, gateway, chats, per_chat, rounds, names=("echo", "gateway"), prefix="e")
    for echo_result, gateway_result in pairs:
        print(_row(echo_result), flush=True)
        print(_row(gateway_result), flush=True)
        print(_ratio(gateway_result, echo_result, f"chats={chats}"), flush=True)
    if rounds > 1:
        cpu = [g.cpu_us / e.cpu_us for e, g in pairs]
        rate = [g.rate / e.rate for e, g in pairs]
        ok = ("MET" if statistics.median(cpu) <= TARGET_CPU_X_ECHO and statistics.median(rate) >= TARGET_RATE_RATIO
              else "MISSED")
        print(f"{'median':8} {f'chats={chats}':>11} cpu {_spread(cpu, 1)} (target <= {TARGET_CPU_X_ECHO:.0f}x)  "
              f"rate {_spread(rate, 3)} (target >= {TARGET_RATE_RATIO})  of {rounds} rounds  [{ok} for the instant model]",
              flush=True)
    return pairs[0]


async def instant_levels(echo: ServerProcess, levels: list[int], messages: int, store_url: str | None = None,
                         against: Path | None = None, rounds: int = 1) -> None:
    """Each level on the SQLite gateway, and with `store_url` on a PostgreSQL one too, side by side."""
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as home, \
            tempfile.TemporaryDirectory(prefix="chorus-bench-pg-") as pg_home, \
            tempfile.TemporaryDirectory(prefix="chorus-bench-old-") as old_home:
        gateway = start_server("gateway", home=home)
        pg = start_server("gateway", home=pg_home, store_url=store_url) if store_url else None
        old = _start_from(against, old_home) if against is not None else None
        try:
            for chats in levels:
                per_chat = max(1, messages // chats)
                echo_result, gateway_result = await _echo_rounds(echo, gateway, chats, per_chat,
                                                                 1 if old is not None else rounds)
                if old is not None:
                    await _against(gateway, old, gateway_result, echo_result, chats, per_chat, rounds)
                if pg is not None:
                    pg_result = await drive("gw-pg", pg, chats, per_chat)
                    print(_row(pg_result), flush=True)
                    print(_ratio(pg_result, echo_result, f"chats={chats}").replace("ratio   ", "ratio-pg"), flush=True)
                    print(f"{'pg/sqlite':9} chats={chats:5} cpu x{pg_result.cpu_us / gateway_result.cpu_us:.2f}  "
                          f"rate x{pg_result.rate / gateway_result.rate:.2f}", flush=True)
        finally:
            gateway.stop()
            if pg is not None:
                pg.stop()
            if old is not None:
                old.stop()


async def openai_levels(echo: ServerProcess, model: ServerProcess, messages: int) -> None:
    """The gateway with the real client, one chat at each history length (history = 2 messages a turn)."""
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as home:
        gateway = start_server("gateway", home=home, model_url=f"http://127.0.0.1:{model.port}/v1")
        try:
            for history in HISTORIES:
                per_chat = max(10, min(messages, 40))
                echo_result = await drive("echo", echo, 1, per_chat)
                result = await drive("gw+oai", gateway, 1, per_chat, warmup=history // 2, tag=f"h{history}")
                print(_row(echo_result), flush=True)
                print(_row(result) + f"  history={history}", flush=True)
                print(_ratio(result, echo_result, f"history={history}").replace(" [MET for the instant model]", "")
                      .replace(" [MISSED for the instant model]", ""), flush=True)
        finally:
            gateway.stop()


def _history(length: int) -> list[Any]:
    from agent.messages import Message

    messages = [Message(role="system", content="You are a helpful assistant. " * 20)]
    while len(messages) < length:
        messages.append(Message(role="user", content=_text("client", len(messages))))
        messages.append(Message(role="assistant", content="echo: " + _text("client", len(messages))))
    return messages


class SdkCreatePath:
    """The previous request path, for comparison: `chat.completions.create` with the SDK's models and transform."""

    def __init__(self, base_url: str) -> None:
        import openai

        self.sdk = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)

    async def complete(self, messages: Sequence[Any], *, tools: Sequence[Any], on_text: Any) -> Any:
        from agent.messages import Message, messages_to_wire

        stream = await self.sdk.chat.completions.create(
            model="fake-model", messages=messages_to_wire(messages), tools=[t.to_wire() for t in tools],
            stream=True, stream_options={"include_usage": True},
        )
        text = []
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
                await on_text(chunk.choices[0].delta.content)
        return type("C", (), {"message": Message(role="assistant", content="".join(text))})()

    async def close(self) -> None:
        await self.sdk.close()


async def client_turns(model: ServerProcess, turns: int) -> None:
    """CPU of one streaming `complete()` in this process, per history length: the real client beside the old path."""
    from agent.messages import Message, ToolSchema
    from agent.model_client import OpenAIModelClient

    base_url = f"http://127.0.0.1:{model.port}/v1"
    clients: list[tuple[str, Any]] = [
        ("client", OpenAIModelClient(model="fake-model", base_url=base_url, api_key="sk-bench")),
        ("sdk-path", SdkCreatePath(base_url)),
    ]
    tools = [ToolSchema(name=f"tool_{n}", description="a tool " * 8,
                        parameters={"type": "object", "properties": {"q": {"type": "string"}}}) for n in range(8)]

    async def sink(_text: str) -> None:
        return None

    try:
        for history in HISTORIES:
            for name, client in clients:
                messages = _history(history)
                cpu_ms: list[float] = []
                for turn in range(turns + 3):
                    messages.append(Message(role="user", content=_text("turn", turn)))
                    started = time.process_time()
                    completion = await client.complete(messages, tools=tools, on_text=sink)
                    if turn >= 3:  # the first turns import, open the connection and warm caches
                        cpu_ms.append((time.process_time() - started) * 1000)
                    messages.append(completion.message)
                sent = sum(len(m.text) for m in messages)
                median = statistics.median(cpu_ms)
                verdict = "MET" if median <= TARGET_CLIENT_MS_AT_100 else "MISSED"
                target = f"  (target <= {TARGET_CLIENT_MS_AT_100} ms: {verdict})" if history == 100 and name == "client" else ""
                print(f"{name:8} history={history:4} (~{sent // 1000:4} kB of text)  cpu per turn median={median:6.2f} ms "
                      f"p90={sorted(cpu_ms)[int(len(cpu_ms) * 0.9)]:6.2f} ms{target}", flush=True)
    finally:
        for _, client in clients:
            await client.close()


def _compress_waits_data() -> Path:
    from bench._compress_waits import DEFAULT_DATA

    return DEFAULT_DATA


async def waits(mode: str, delay: float, rate: float, data: Path, levels: list[int] | None = None) -> None:
    """The gateway's added latency and RSS at each level of active chats, then the compression figures."""
    from bench import _compress_waits, _latency

    levels = levels or [1, 100, 1000] + ([10_000] if mode == "full" else [])
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as home:
        gateway = start_server("gateway", home=home, model_delay=delay)
        try:
            print(f"idle gateway rss={gateway.rss()[0] / (1 << 20):.0f} MiB", flush=True)
            found = []
            for chats in levels:
                per_chat = max(2, min(10, 2000 // chats))
                found.append(await _latency.measure(gateway, chats, per_chat, rate, tag=mode[0]))
                print(_latency.row(found[-1], delay), flush=True)
            print(_latency.summary(found), flush=True)
        finally:
            gateway.stop()
    for line in await _compress_waits.compression_waits(data, delay=3.0):
        print(line, flush=True)
    print(_compress_waits.compress_cli_wall(data), flush=True)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", choices=("instant", "openai"), default="instant",
                        help="openai: also the real OpenAIModelClient against a loopback fake")
    parser.add_argument("--chats", default="1,100,1000", help="comma-separated active chat counts (instant model)")
    parser.add_argument("--messages", type=int, default=400, help="messages per level (at least one per chat)")
    parser.add_argument("--turns", type=int, default=40, help="client-alone turns per history (--model openai)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="also run the instant levels on this empty PostgreSQL database (postgresql://…)")
    parser.add_argument("--against", default=None, metavar="DIR", type=Path,
                        help="also run the gateway of this source tree at each level, right after this one's")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds per level, alternating which server goes first (medians printed): echo and "
                             "gateway, or with --against this tree's gateway and the other's")
    parser.add_argument("--waits", choices=("quick", "full"), default=None,
                        help="what users wait for: added latency and RSS at 1/100/1,000 chats (full: and 10,000), "
                             "a compression's CPU beside its summary call, `chorus compress` wall time")
    parser.add_argument("--model-delay", type=float, default=0.8, help="seconds the model takes to answer (--waits)")
    parser.add_argument("--rate", type=float, default=200.0, help="messages/s over all chats (--waits)")
    parser.add_argument("--data", type=Path, default=_compress_waits_data(), help="session files (--waits)")
    parser.add_argument("--levels", default="", help="comma-separated active chat counts instead of the mode's (--waits)")
    args = parser.parse_args(argv)
    if args.waits is not None:
        await waits(args.waits, args.model_delay, args.rate, args.data, [int(x) for x in args.levels.split(",") if x])
        return 0
    if args.store is not None and not args.store.startswith(("postgresql://", "postgres://")):
        print("bench/gateway.py: --store must be a postgresql://user@host:port/db URL", file=sys.stderr)
        return 2
    levels = [int(x) for x in args.chats.split(",") if x.strip()]
    echo = start_server("echo")
    model = start_server("openai") if args.model == "openai" else None
    try:
        if levels:
            await instant_levels(echo, levels, args.messages, args.store, args.against, max(1, args.rounds))
        if model is not None:
            await client_turns(model, args.turns)
            await openai_levels(echo, model, args.messages)
    finally:
        echo.stop()
        if model is not None:
            model.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
