"""No single message can stop the gateway: poison text is cleaned, a failing message is quarantined, a dead task restarts."""
from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from adapters.base import InboundMessage
from gateway.admin import Operations
from gateway.app import Gateway
from gateway.build import build_gateway
from gateway.ops.supervise import Supervisor
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.admin.helpers import TOKEN, admin_gateway, config_for, serve_app
from tests.gateway.harness import chat, make_config, running, web_port

WAIT = 10.0


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = WAIT) -> None:
    """Wait for `condition` to hold (checked every 20 ms), failing after `timeout`."""
    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.02)  # a polling interval, not a synchronisation guess
    await asyncio.wait_for(poll(), timeout)


async def test_cut_emoji_is_answered_and_other_chats_keep_working(fake_openai: FakeOpenAI, home: Path) -> None:
    """A frame with a lone surrogate is answered (the model sees U+FFFD) and another chat is answered after it."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        port = web_port(admin.gateway)
        async with chat(port) as poisoned:
            await poisoned.say("cut \ud83d emoji")
            assert await poisoned.reply() == "echo: cut \ufffd emoji"
        async with chat(port) as other:
            await other.say("still there?")
            assert await other.reply() == "echo: still there?"
        async with admin.http.get(admin.url + "/readyz") as response:
            assert response.status == 200
        status, body = await admin.get("/api/deadletters")
        assert (status, body["count"], body["deadletters"]) == (200, 0, [])


async def test_a_message_that_cannot_be_journaled_is_dead_lettered_and_intake_goes_on(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """A journal write failure quarantines that message (file, API, metric, one error line); the next is answered."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        own = Path(admin.gateway.parts.journal._own_dir)  # noqa: SLF001 - break the real directory, no mocks
        shutil.rmtree(own)
        own.write_text("not a directory", encoding="utf-8")  # every entry create now fails: NotADirectoryError
        async with chat(web_port(admin.gateway)) as tab:
            await tab.say("this one is quarantined")
            await until(_has(admin.gateway.parts.deadletters.count))
            own.unlink()
            own.mkdir()
            await tab.say("this one is answered")
            assert await tab.reply() == "echo: this one is answered"
        status, body = await admin.get("/api/deadletters")
        _, events = await admin.get("/api/events?kind=error")
        async with admin.http.get(admin.url + "/metrics") as response:
            metrics = await response.text()
    # The error log line, as the log tap saw it: exactly one, naming the stage and the error type.
    assert [e["text"] for e in events["events"]] == [
        "message quarantined as a dead letter (GET /api/deadletters) (error=NotADirectoryError; stage=journal)"]
    assert status == 200 and body["count"] == 1
    letter = body["deadletters"][0]
    assert (letter["stage"], letter["error"], letter["text_preview"], letter["stored"]) == (
        "journal", "NotADirectoryError", "this one is quarantined", True)
    assert 'chorus_deadletters_total{stage="journal"} 1.0' in metrics
    kept = list((home / "deadletter").glob("*.json"))
    assert len(kept) == 1 and "this one is quarantined" in kept[0].read_text(encoding="ascii")


def _has(count: Callable[[], int]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return count() > 0
    return check


class FlakyQueue(asyncio.Queue[InboundMessage]):
    """A real queue whose `get` raises once when armed: the intake loop dies as from an unexpected bug."""

    armed = False

    async def get(self) -> InboundMessage:
        if self.armed:
            self.armed = False
            raise RuntimeError("intake bug")
        return await super().get()


async def test_a_dead_intake_turns_readyz_red_and_is_restarted(fake_openai: FakeOpenAI, home: Path) -> None:
    """The intake task dies: /readyz is 503 naming it while it waits to restart, then 200, and chats are answered."""
    release = asyncio.Event()

    async def held_backoff(_delay: float) -> None:
        await release.wait()

    config = make_config(home, fake_openai.base_url)
    ops = Operations.create(config)
    gateway = build_gateway(config, engine=ops.engine())
    gateway.supervisor = Supervisor(sleep=held_backoff)
    queue = FlakyQueue()
    gateway.queue = queue
    async with running(gateway):
        app = ops.attach(gateway, token=TOKEN)
        async with serve_app(app) as url, aiohttp.ClientSession() as http, chat(web_port(gateway)) as tab:
            await tab.say("before")
            assert await tab.reply() == "echo: before"
            queue.armed = True
            await tab.say("during")  # wakes the loop, which dies before taking this message
            await until(_down(gateway))
            async with http.get(url + "/readyz") as response:
                red = (response.status, await response.json())
            release.set()
            assert await tab.reply() == "echo: during"  # still queued: nothing accepted is lost
            await until(_ready(http, url))
        ops.detach()
    assert red[0] == 503
    assert (red[1]["background_tasks"], "gateway-intake died (RuntimeError)" in red[1]["detail"]) == (False, True)
    assert gateway.supervisor.restarts == {"gateway-intake": 1}


def _down(gateway: Gateway) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return bool(gateway.supervisor.down)
    return check


def _ready(http: aiohttp.ClientSession, url: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        async with http.get(url + "/readyz") as response:
            return response.status == 200
    return check
