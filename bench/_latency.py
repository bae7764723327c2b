"""What a chat user waits for on the gateway: its added latency at many active chats, and its memory.

Each active chat is a websocket client that sends a message, waits for the reply, thinks, and sends the next; the
gateway answers through `DelayedModel` (a model's pace: the reply streamed after `delay` seconds), so the chats are
concurrent and the gateway is not CPU-bound. Per message, two legs the gateway adds:
  in   from the client's send to the model request (websocket intake, routing, the journal, the session lock,
       the agent's prompt), read on the system-wide monotonic clock in both processes;
  out  from the model's last token to the reply frame reaching the client (the outbox, the edit pacing, the send).
Each includes one loopback websocket hop (tens of microseconds) and any queueing in the gateway.
"""
from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass

import aiohttp

from bench._servers import ServerProcess

TARGET_P99_MS = 50.0
TARGET_RSS_BYTES = 1 << 30
CONNECTS_AT_ONCE = 200


@dataclass(frozen=True)
class Waits:
    chats: int
    messages: int
    seconds: float
    cpu_seconds: float
    inbound_ms: list[float]
    outbound_ms: list[float]
    rss: int
    peak_rss: int
    failed_chats: int = 0  # chats whose connection was closed before their last reply


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


async def _read(ws: aiohttp.ClientWebSocketResponse, frames: asyncio.Queue[dict[str, object]]) -> None:
    """Every frame of the chat, read as it comes: a reading client also answers the gateway's heartbeat pings
    (a chat thinking for a minute without reading would be closed as dead)."""
    async for message in ws:
        if message.type == aiohttp.WSMsgType.TEXT:
            frames.put_nowait(message.json())


async def _chat(session: aiohttp.ClientSession, url: str, chat_id: str, count: int, think: float,
                sent: dict[str, tuple[float, float]], connected: asyncio.Semaphore, ready: asyncio.Event,
                go: asyncio.Event, done: asyncio.Event, rng: random.Random, finished: list[int]) -> None:
    try:
        async with connected:
            ws = await session.ws_connect(f"{url}?chat={chat_id}", max_msg_size=0)
    except (TimeoutError, aiohttp.ClientError, OSError):
        finished[1] += 1
        ready.set()
        return
    frames: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    reader = asyncio.create_task(_read(ws, frames))
    try:
        ready.set()
        await go.wait()
        await asyncio.sleep(rng.uniform(0, think))  # the chats start spread over one think time
        for i in range(count):
            text = f"msg {i} from {chat_id} lorem ipsum dolor sit amet lorem ipsum dolor sit amet"
            expected = f"echo: {text}"
            started = time.perf_counter()
            await ws.send_json({"type": "message", "text": text, "client_id": f"{chat_id}-{i}"})
            while True:
                frame = await asyncio.wait_for(frames.get(), 300)
                if frame.get("type") in ("message", "edit") and frame.get("text") == expected:
                    break
            sent[text] = (started, time.perf_counter())
            if i < count - 1:
                await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))
        finished[0] += 1
        await done.wait()  # every chat stays connected until the level is read
    except (TimeoutError, aiohttp.ClientError):
        finished[1] += 1  # closed under it (a gateway too starved of CPU to answer its heartbeat)
    finally:
        await ws.close()
        await reader


async def measure(server: ServerProcess, chats: int, per_chat: int, rate: float, tag: str) -> Waits:
    """`chats` connected clients, `per_chat` messages each, at about `rate` messages/s over all of them."""
    url = f"http://127.0.0.1:{server.port}/ws"
    think = chats / rate  # each chat's pause between a reply and its next message
    sent: dict[str, tuple[float, float]] = {}
    rng = random.Random(chats)
    connected = asyncio.Semaphore(CONNECTS_AT_ONCE)
    go, done = asyncio.Event(), asyncio.Event()
    finished = [0, 0]  # chats done, chats failed
    server.timings()  # forget the previous level's
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        readies = [asyncio.Event() for _ in range(chats)]
        tasks = [asyncio.create_task(_chat(session, url, f"lat{tag}{chats}c{n}", per_chat, think, sent, connected,
                                           readies[n], go, done, rng, finished)) for n in range(chats)]
        waiting = asyncio.gather(*(r.wait() for r in readies))
        await asyncio.wait_for(waiting, 1800)
        cpu_before, started = server.cpu(), time.perf_counter()
        go.set()
        while sum(finished) < chats:
            await asyncio.sleep(0.2)
        seconds, cpu = time.perf_counter() - started, server.cpu() - cpu_before
        rss, peak = server.rss()  # with every chat still connected
        done.set()
        await asyncio.gather(*tasks)
    timings = server.timings()
    inbound = [(timings[text][0] - at[0]) * 1000 for text, at in sent.items() if text in timings]
    outbound = [(at[1] - timings[text][1]) * 1000 for text, at in sent.items() if text in timings]
    return Waits(chats, len(sent), seconds, cpu, inbound, outbound, rss, peak, finished[1])


def row(waits: Waits, delay: float) -> str:
    mib = 1 << 20
    ok = (not waits.failed_chats and pct(waits.inbound_ms, 0.99) <= TARGET_P99_MS and pct(waits.outbound_ms, 0.99) <= TARGET_P99_MS
          and waits.peak_rss <= TARGET_RSS_BYTES)
    return (
        f"chats={waits.chats:6} messages={waits.messages:6} in {waits.seconds:6.1f} s "
        f"(cpu {waits.cpu_seconds / max(1, waits.messages) * 1000:5.2f} ms/msg)  "
        f"in p50={pct(waits.inbound_ms, 0.5):7.2f} p99={pct(waits.inbound_ms, 0.99):7.2f} ms  "
        f"out p50={pct(waits.outbound_ms, 0.5):7.2f} p99={pct(waits.outbound_ms, 0.99):7.2f} ms  "
        f"rss={waits.rss / mib:6.0f} MiB (peak {waits.peak_rss / mib:.0f})  model delay {delay:.2f} s  "
        + (f"{waits.failed_chats} chats closed early  " if waits.failed_chats else "") +
        f"[{'MET' if ok else 'MISSED'}: p99 <= {TARGET_P99_MS:.0f} ms, <= 1 GiB]"
    )


def summary(levels: list[Waits]) -> str:
    worst = max(levels, key=lambda w: pct(w.inbound_ms, 0.99))
    return f"worst inbound p99 {pct(worst.inbound_ms, 0.99):.2f} ms at {worst.chats} chats; " \
           f"median inbound p50 over levels {statistics.median(pct(w.inbound_ms, 0.5) for w in levels):.2f} ms"
