"""The operator's view of a chat: prompt source, model and usage in the session API, /metrics and the dashboard."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from gateway.admin import EventLog, build_admin_app
from gateway.config import ChorusConfig
from gateway.ops.live_config import LiveConfig
from gateway.ops.metrics import Metrics
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.admin.dashboard_support import FixedBackend, chromium, parse_dom, view
from tests.gateway.admin.helpers import TOKEN, admin_gateway, config_for, serve_app, web_key
from tests.gateway.harness import chat, web_port


async def test_sessions_api_and_metrics_show_prompt_source_model_and_usage(tmp_path: Path) -> None:
    """After one turn in a chat with a prompt override: the API names the source, model and tokens; /metrics
    has the platform's all-time tokens."""
    async with FakeOpenAI() as fake:
        fake.push(Reply(content="hi", prompt_tokens=120, completion_tokens=8))
        config = config_for(tmp_path, fake.base_url, chats={"web:ops": {"system_prompt": "You are the ops bot."}})
        async with admin_gateway(config) as admin:
            async with chat(web_port(admin.gateway), "ops") as client:
                await client.say("hello")
                await client.reply()
            status, listed = await admin.get("/api/sessions")
            _, detail = await admin.get(f"/api/sessions/{web_key('ops')}")
            async with admin.http.get(admin.url + "/metrics") as response:
                metrics = await response.text()
    assert status == 200
    (only,) = listed["sessions"]
    assert {k: only[k] for k in ("prompt_source", "model", "session_tokens", "chat_tokens")} == {
        "prompt_source": "chat override", "model": "fake-model", "session_tokens": 128, "chat_tokens": 128,
    }
    assert detail["prompt_source"] == "chat override"
    assert 'chorus_chat_tokens{direction="prompt",platform="web"} 120.0' in metrics
    assert 'chorus_chat_tokens{direction="completion",platform="web"} 8.0' in metrics


async def test_the_dashboard_detail_names_model_prompt_and_usage(tmp_path: Path) -> None:
    """A session's detail line shows its model, its prompt source and its usage."""
    key = "agent:default:telegram:group:-100200"
    shown = dataclasses.replace(view(key, 40_000), model="big-model", prompt_source="file", session_tokens=1234,
                                chat_tokens=98765)
    backend = FixedBackend([shown])
    app = build_admin_app(backend, metrics=Metrics(), token=TOKEN, live=LiveConfig(ChorusConfig()), events=EventLog())
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard#token={TOKEN}&session={key}", tmp_path / "p", "--dump-dom"))
    figures = next(texts for _tag, attrs, texts in dom.found if attrs.get("id") == "detail-figures")
    assert "model big-model · prompt file · usage 1,234 tokens this session, 98,765 in this chat" in " ".join(figures)
