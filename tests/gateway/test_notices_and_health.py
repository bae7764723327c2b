"""Progress notices in the chat, the no-model path, readiness, and the web page."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from agent.messages import Message, assistant, user
from agent.store import STATE_DB_NAME, SqliteSessionStore
from gateway.build import MODEL_MISSING_TEXT, build_gateway
from gateway.i18n import say
from gateway.intake.routing import chat_scope, session_key
from gateway.ops.health import health_routes
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import chat, make_config, running, started, web_port
from tests.gateway.run_harness import run_like_chorus


def _seed(home: Path, platform: str, chat_id: str, pairs: int) -> None:
    key = session_key(profile="default", platform=platform, kind="dm", chat_id=chat_id, thread_id=None, user_id=None)
    store = SqliteSessionStore(home / STATE_DB_NAME)
    store.open()
    try:
        session = store.ensure_session(key, platform=platform, chat_id=chat_scope(platform, chat_id))
        messages: list[Message] = []
        for i in range(pairs):
            detail = " ".join(f"line {j} of the build log for module {i} is fine" for j in range(6))
            messages += [user(f"step {i}: please check the build log for module {i}"), assistant(f"module {i}: {detail}")]
        store.append(session.id, messages)
    finally:
        store.close()


async def test_progress_notice_is_edited_from_start_to_result(fake_openai: FakeOpenAI, home: Path) -> None:
    """With progress_notices, a compression shows "compressing context…" edited to the token figures."""
    _seed(home, "telegram", "c1", 40)  # about 6,000 tokens: past 85% of a 4,096 window, so hygiene compresses

    def responder(request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]["content"]
        if last == "go on":
            return Reply(content="echo: go on")
        return Reply(content="## Goal\ncheck every module\n## Completed actions\nall modules build")  # the summary

    fake_openai.responder = responder
    platform = FakePlatform("telegram")
    config = make_config(
        home, fake_openai.base_url, model={"name": "fake-model", "base_url": fake_openai.base_url,
                                           "api_key": "sk-test", "context_length": 4096},
        platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
        compression={"progress_notices": True},
    )
    async with started(config, adapters={"telegram": platform}):
        await platform.inject("go on")
        finished = await platform.wait_text("context compressed:")
        await platform.wait_text("echo: go on")
    started_notice = next(o for o in platform.outgoing if o.text == say("en", "compress.started"))
    assert (finished.kind, finished.message_id) == ("edit", started_notice.message_id)
    assert "→" in finished.text and finished.text.endswith("tokens")


async def test_without_a_model_the_page_and_the_reply_say_what_to_set(home: Path) -> None:
    """No model configured: the web page banner and the reply name model.name, model.base_url, model.api_key."""
    config = make_config(home, "http://127.0.0.1:9/v1", model={"name": None, "base_url": None, "api_key": None})
    async with running(build_gateway(config)) as gateway:
        async with chat(web_port(gateway)) as tab:
            banner = await tab.next_frame("banner")
            await tab.say("hello?")
            reply = await tab.reply()
    assert banner["text"] == MODEL_MISSING_TEXT == reply
    assert all(key in reply for key in ("model.name", "model.base_url", "model.api_key", "OPENAI_API_KEY"))


async def test_readyz_reports_store_coordinator_and_adapters(fake_openai: FakeOpenAI, home: Path) -> None:
    """/readyz is 503 before start and 200 once the store, coordinator and adapters are up; /healthz is 200."""
    gateway = build_gateway(make_config(home, fake_openai.base_url))
    app = web.Application()
    app.add_routes(health_routes(gateway.readiness))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session:
            before = (await session.get(f"http://127.0.0.1:{port}/readyz")).status
            async with running(gateway):
                ready = await session.get(f"http://127.0.0.1:{port}/readyz")
                body = await ready.json()
                health = (await session.get(f"http://127.0.0.1:{port}/healthz")).status
    finally:
        await runner.cleanup()
    assert (before, ready.status, health) == (503, 200, 200)
    assert (body["store_open"], body["coordinator"], body["adapters_started"]) == (True, True, True)


async def test_web_page_is_served(fake_openai: FakeOpenAI, home: Path) -> None:
    """GET / returns the chat page; its script (served too) keeps the chat id in localStorage and opens /ws."""
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        async with aiohttp.ClientSession() as session:
            response = await session.get(f"http://127.0.0.1:{web_port(gateway)}/")
            page = await response.text()
            script_response = await session.get(f"http://127.0.0.1:{web_port(gateway)}/static/chat.js")
            script = await script_response.text()
    assert response.status == 200 and 'src="static/chat.js"' in page
    assert script_response.status == 200 and "localStorage" in script and "/ws?chat=" in script


async def test_idle_session_is_compacted_before_the_next_reply(fake_openai: FakeOpenAI, home: Path) -> None:
    """With idle_compact_after_seconds, a session silent that long is compressed (trigger idle) before answering."""
    _seed(home, "telegram", "c1", 30)  # about 3,000 tokens: below hygiene, above the tail budget

    def responder(request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]["content"]
        if last in ("first", "second"):
            return Reply(content=f"echo: {last}")
        return Reply(content="## Goal\\ncheck every module\\n## Completed actions\\nall modules build")

    fake_openai.responder = responder
    platform = FakePlatform("telegram")
    config = make_config(
        home, fake_openai.base_url, model={"name": "fake-model", "base_url": fake_openai.base_url,
                                           "api_key": "sk-test", "context_length": 8192},
        platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
        compression={"progress_notices": True, "idle_compact_after_seconds": 600},
    )
    async with run_like_chorus(config, adapters={"telegram": platform}) as (gateway, _ops):  # live-tuned engine
        await platform.inject("first")
        await platform.wait_text("echo: first")
        agent = next(a for _, a in gateway.parts.agents.live_agents())
        assert agent.state.marks.last_turn_at is not None
        agent.state.marks.last_turn_at -= 3600  # an hour of silence
        await platform.inject("second")
        compressed = await platform.wait_text("context compressed:")
        await platform.wait_text("echo: second")
    assert compressed.kind == "edit"
    assert agent.engine.state.compression_count == 1
