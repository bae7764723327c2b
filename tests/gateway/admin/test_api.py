"""The admin API on a real gateway: auth, sessions, operator compression, config PATCH/persist/reload, events."""
from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from pydantic import SecretStr

from gateway.admin import Operations
from gateway.config import load_config
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.admin.helpers import TOKEN, admin_gateway, config_for, seed, serve_app
from tests.gateway.harness import chat, started, web_port

SUMMARY = "## Goal\nFinish the rollout.\n## Completed actions\nSteps 0-29 are done."


async def test_operator_api_needs_the_token_but_health_and_metrics_do_not(
    fake_openai: FakeOpenAI, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/api/* is 401 without or with a wrong token and 200 with it; /healthz, /readyz, /metrics need none."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        http, url = admin.http, admin.url
        statuses = {}
        for name, headers in (("none", {}), ("wrong", {"Authorization": "Bearer nope"}),
                              ("basic", {"Authorization": f"Basic {TOKEN}"}), ("right", admin.headers())):
            async with http.get(url + "/api/sessions", headers=headers) as resp:
                statuses[name] = resp.status
        for path in ("/healthz", "/readyz", "/metrics", "/dashboard"):
            async with http.get(url + path) as resp:
                statuses[path] = resp.status
    assert statuses == {"none": 401, "wrong": 401, "basic": 401, "right": 200,
                        "/healthz": 200, "/readyz": 200, "/metrics": 200, "/dashboard": 200}
    assert TOKEN not in capsys.readouterr().out


async def test_without_a_configured_token_the_operator_api_is_disabled(fake_openai: FakeOpenAI, home: Path) -> None:
    """admin.token unset: /api/* answers 403 saying to set admin.token."""
    async with admin_gateway(config_for(home, fake_openai.base_url), token=None) as admin:
        async with admin.http.get(admin.url + "/api/sessions", headers=admin.headers()) as resp:
            status, body = resp.status, await resp.json()
    assert status == 403
    assert "set admin.token" in body["error"]


async def test_sessions_list_and_inspect_show_fill_threshold_and_activity(fake_openai: FakeOpenAI, home: Path) -> None:
    """A chatted session is listed live with its real prompt tokens, % of the window and threshold."""
    key = seed(home, "listed", 10)
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        async with chat(web_port(admin.gateway), "listed") as client:
            await client.say("hello")
            await client.reply()
        status, listed = await admin.get("/api/sessions")
        _, detail = await admin.get(f"/api/sessions/{key}")
        missing, _ = await admin.get("/api/sessions/agent:default:web:dm:nobody")
    (view,) = listed["sessions"]
    reported = fake_openai.requests[-1]
    assert status == 200 and missing == 404
    assert (view["key"], view["platform"], view["chat"], view["messages"], view["live"]) == (key, "web", "web:listed", 12, True)
    assert view["tokens_source"] == "reported" and view["tokens"] > 0 and reported["messages"]
    assert (view["context_length"], view["threshold"], view["threshold_percent"]) == (128000, 64000, 50.0)
    assert view["fill_percent"] == round(100 * view["tokens"] / 128000, 1)
    assert view["last_activity"] is not None
    assert (detail["key"], detail["last_summary"], detail["recent_compressions"]) == (key, None, [])


async def test_operator_compression_returns_before_after_and_persists(fake_openai: FakeOpenAI, home: Path) -> None:
    """POST …/compress on a stored session (no live agent yet) compresses it, stores the result, logs the event."""
    key = seed(home, "squeeze", 60, words=30)
    config = config_for(home, fake_openai.base_url, model={"context_length": 8000})
    async with admin_gateway(config) as admin:
        fake_openai.push(Reply(content=SUMMARY))
        status, body = await admin.send("POST", f"/api/sessions/{key}/compress")
        _, detail = await admin.get(f"/api/sessions/{key}")
        _, events = await admin.get("/api/events?kind=compression")
        store = admin.gateway.parts.store
        session = store.active_session(key)
        assert session is not None
        stored = store.active_messages(session.id)
    assert status == 200
    assert (body["outcome"], body["messages_before"]) == ("compressed", 60)
    assert body["tokens_after"] < body["tokens_before"] and body["messages_after"] < 60
    assert len(stored) == body["messages_after"]
    assert SUMMARY.splitlines()[1] in (detail["last_summary"] or "")
    assert [(e["session"], e["trigger"], e["outcome"]) for e in events["events"]] == [(key, "manual", "compressed")]
    assert [e["seq"] for e in detail["recent_compressions"]] == [events["events"][0]["seq"]]


async def test_patch_rejects_bad_values_naming_the_key(fake_openai: FakeOpenAI, home: Path) -> None:
    """Invalid value → 400 naming key, value and the rule; a start-only key → 400 saying restart; a typo → did you mean."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        bad_status, bad = await admin.send("PATCH", "/api/config", {"compression.target_ratio": 1.5})
        start_status, start = await admin.send("PATCH", "/api/config", {"redis.url": "redis://x"})
        empty_status, _ = await admin.send("PATCH", "/api/config", {})
        typo_status, typo = await admin.send("PATCH", "/api/config", {"compression.treshold": 0.6})
        _, current = await admin.get("/api/config")
    assert (bad_status, bad["key"]) == (400, "compression.target_ratio")
    assert "got 1.5" in bad["error"] and "less than 1" in bad["error"]
    assert (start_status, start["key"]) == (400, "redis.url")
    assert "restart" in start["error"] and "allowed_keys" not in start
    assert empty_status == 400
    assert (typo_status, typo["error"]) == (400, "compression.treshold: unknown key; did you mean compression.threshold?")
    assert (current["values"]["compression.target_ratio"], current["version"]) == (0.2, 0)


async def test_patch_with_persist_saves_to_the_config_file(fake_openai: FakeOpenAI, home: Path, tmp_path: Path) -> None:
    """?persist=true writes the change into the loaded file (comment kept) and says where."""
    path = tmp_path / "chorus.yaml"
    path.write_text("compression:\n  protect_last_n: 20  # tail floor\n", encoding="utf-8")
    async with admin_gateway(config_for(home, fake_openai.base_url), path=path) as admin:
        status, body = await admin.send("PATCH", "/api/config?persist=true", {"compression.protect_last_n": 12})
    assert status == 200
    assert (body["persisted"], body["path"], body["mode"]) == (True, str(path), "edited")
    assert path.read_text(encoding="utf-8") == "compression:\n  protect_last_n: 12  # tail floor\n"
    assert load_config(path).compression.protect_last_n == 12


async def test_persist_without_a_config_file_is_refused(fake_openai: FakeOpenAI, home: Path) -> None:
    """Built-in defaults: persist=true is a 400 and nothing changes."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        status, body = await admin.send("PATCH", "/api/config?persist=true", {"compression.protect_last_n": 12})
        _, current = await admin.get("/api/config")
    assert status == 400 and "config file" in body["error"]
    assert current["values"]["compression.protect_last_n"] == 20


async def test_reload_endpoint_applies_the_file_or_keeps_the_running_config(
    fake_openai: FakeOpenAI, home: Path, tmp_path: Path
) -> None:
    """POST /api/config/reload picks up a valid file; an invalid one is a 400 naming the key, config kept."""
    path = tmp_path / "chorus.yaml"
    config = config_for(home, fake_openai.base_url)
    async with admin_gateway(config, path=path) as admin:
        path.write_text("compression:\n  hygiene_hard_message_limit: 300\n", encoding="utf-8")
        ok_status, ok = await admin.send("POST", "/api/config/reload")
        path.write_text("compression:\n  hygiene_hard_message_limit: -1\n", encoding="utf-8")
        bad_status, bad = await admin.send("POST", "/api/config/reload")
        limit = admin.gateway.parts.runner.settings.hard_message_limit
    assert ok_status == 200
    # Every key the file sets differently is applied now (all are live), the limit among them.
    assert {"key": "compression.hygiene_hard_message_limit", "old": 5000, "new": 300} in ok["changed"]
    assert "home" in ok["restart_required"]  # the file has no home: a restart would change it, reload does not
    assert (bad_status, bad["key"]) == (400, "compression.hygiene_hard_message_limit")
    assert limit == 300


async def test_unknown_static_file_is_404(fake_openai: FakeOpenAI, home: Path) -> None:
    """Only the dashboard's own assets are served."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        async with aiohttp.ClientSession() as http:
            async with http.get(admin.url + "/dashboard/..%2Fapp.py") as resp:
                status = resp.status
    assert status == 404




async def test_a_stored_session_without_a_live_agent_is_listed_from_the_store(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """A session nobody talked to since the start is listed (not live, tokens unknown) with its stored count."""
    key = seed(home, "idle", 10)
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        _, listed = await admin.get("/api/sessions")
    (view,) = listed["sessions"]
    assert (view["key"], view["live"], view["messages"], view["tokens"], view["tokens_source"], view["fill"]) == (
        key, False, 10, None, "unknown", None
    )
    assert (view["threshold"], view["compressions"]) == (64000, 0)


async def test_extra_routes_are_served_without_the_token(fake_openai: FakeOpenAI, home: Path) -> None:
    """Platform webhook routes handed to attach() are served beside the admin routes, outside /api/."""
    async def hook(_request: web.Request) -> web.Response:
        return web.Response(text="hooked")

    ops = Operations.create(config_for(home, fake_openai.base_url))
    async with started(ops.live.current(), engine=ops.engine()) as gateway:
        app = ops.attach(gateway, token=SecretStr(TOKEN), tap_logs=False, extra_routes=[web.post("/telegram", hook)])
        try:
            async with serve_app(app) as url, aiohttp.ClientSession() as http:
                async with http.post(url + "/telegram") as resp:
                    hooked = (resp.status, await resp.text())
                async with http.get(url + "/api/config", headers={"Authorization": f"Bearer {TOKEN}"}) as resp:
                    authorised = resp.status
        finally:
            ops.detach()
    assert (hooked, authorised) == ((200, "hooked"), 200)


async def test_sessions_are_listed_fullest_first(fake_openai: FakeOpenAI, home: Path) -> None:
    """Live sessions come by fill, descending; a session with unknown figures comes last."""
    big, small, idle = seed(home, "big", 40, words=60), seed(home, "small", 4), seed(home, "idle2", 6)
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        for name in ("small", "big"):
            async with chat(web_port(admin.gateway), name) as client:
                await client.say("hello")
                await client.reply()
        _, listed = await admin.get("/api/sessions")
    assert [v["key"] for v in listed["sessions"]] == [big, small, idle]
    assert [v["live"] for v in listed["sessions"]] == [True, True, False]
