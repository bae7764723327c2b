"""Live tuning on a running gateway: a PATCH through the admin API applies from the next message, no restart."""
from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.admin.helpers import admin_gateway, config_for, seed
from tests.gateway.harness import chat, web_port

CHAT = "tuning"
SUMMARY = "## Goal\nFinish the rollout.\n## Completed actions\nSteps 0-29 are done."


async def test_patching_the_hard_message_limit_triggers_hygiene_on_the_next_message(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """60 messages under limit 5000: no hygiene; PATCH the limit to 50: the next message runs hygiene and shrinks."""
    key = seed(home, CHAT, 60, words=30)
    config = config_for(home, fake_openai.base_url, model={"context_length": 8000})
    async with admin_gateway(config) as admin:
        runner = admin.gateway.parts.runner
        async with chat(web_port(admin.gateway), CHAT) as client:
            await client.say("first question")
            assert await client.reply() == "echo: first question"
            assert runner.hygiene_runs == 0

            status, body = await admin.send("PATCH", "/api/config", {"compression.hygiene_hard_message_limit": 50})
            assert status == 200
            assert body["changed"] == [{"key": "compression.hygiene_hard_message_limit", "old": 5000, "new": 50}]
            assert (body["persisted"], body["note"]) == (False, "runtime only: lost on restart")
            assert runner.settings.hard_message_limit == 50

            fake_openai.push(Reply(content=SUMMARY))  # the hygiene compression's summary request comes first
            await client.say("second question")
            assert await client.reply() == "echo: second question"
        assert runner.hygiene_runs == 1
        hygiene = admin.ops.events.recent(kind="compression", session=key)
        assert [(e.trigger, e.outcome) for e in hygiene] == [("hygiene", "compressed")]
        status, listed = await admin.get("/api/sessions")
        (view,) = listed["sessions"]
        assert (view["key"], view["compressions"]) == (key, 1)
        assert view["messages"] < 50


async def test_patching_the_threshold_changes_the_live_engine_threshold(fake_openai: FakeOpenAI, home: Path) -> None:
    """A live agent's compression threshold follows a PATCH of compression.threshold (128K window: 64,000 → 115,200)."""
    seed(home, CHAT, 4)
    config = config_for(home, fake_openai.base_url)
    async with admin_gateway(config) as admin:
        async with chat(web_port(admin.gateway), CHAT) as client:
            await client.say("hello")
            await client.reply()
        _, before = await admin.get("/api/sessions")
        status, _ = await admin.send("PATCH", "/api/config", {"compression.threshold": 0.9})
        _, after = await admin.get("/api/sessions")
    assert status == 200
    assert (before["sessions"][0]["threshold"], after["sessions"][0]["threshold"]) == (64000, 115200)
