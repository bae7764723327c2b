"""/metrics over HTTP on a real gateway: families and label values after turns, hygiene, an operator compression, an error."""
from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gateway.i18n import say
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.admin.helpers import admin_gateway, config_for, seed
from tests.gateway.harness import chat, web_port

SUMMARY = "## Goal\nFinish the rollout.\n## Completed actions\nSteps are done."


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample by (name, sorted labels)."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


async def test_metrics_count_turns_compressions_hygiene_errors_and_config_changes(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """Two answered turns (one after hygiene), one failed turn, one operator compression, one PATCH are all counted."""
    key = seed(home, "metered", 60, words=30)
    config = config_for(home, fake_openai.base_url, model={"context_length": 8000, "retry": {"max_attempts": 1}},
                        compression={"hygiene_hard_message_limit": 50})
    async with admin_gateway(config) as admin:
        async with chat(web_port(admin.gateway), "metered") as client:
            fake_openai.push(Reply(content=SUMMARY))  # hygiene's summary request
            await client.say("one")
            assert await client.reply() == "echo: one"
            await client.say("two")
            assert await client.reply() == "echo: two"
            fake_openai.push(Reply(status=500, error_type="server_error"))
            await client.say("three")
            assert await client.reply() == say("en", "turn.unavailable")
        fake_openai.push(Reply(content=SUMMARY))
        status, _ = await admin.send("POST", f"/api/sessions/{key}/compress")
        await admin.send("PATCH", "/api/config", {"compression.protect_last_n": 10})
        async with admin.http.get(admin.url + "/metrics") as resp:
            content_type, text = resp.headers["Content-Type"], await resp.text()
        _, events = await admin.get("/api/events")
    got = samples(text)
    families = {f.name for f in text_string_to_metric_families(text)}
    assert status == 200 and content_type.startswith("text/plain; version=")
    assert {"chorus_messages_out", "chorus_turn_seconds", "chorus_llm_tokens", "chorus_compressions",
            "chorus_hygiene_runs", "chorus_queue_depth", "chorus_agent_cache", "chorus_turn_errors",
            "chorus_live_agents", "chorus_config_changes", "chorus_redis_errors"} <= families
    assert got[("chorus_compressions_total", (("outcome", "compressed"), ("trigger", "hygiene")))] == 1
    assert got[("chorus_compressions_total", (("outcome", "compressed"), ("trigger", "manual")))] == 1
    assert got[("chorus_hygiene_runs_total", (("result", "compressed"),))] == 1
    assert got[("chorus_turn_seconds_count", (("platform", "web"),))] == 2
    assert got[("chorus_messages_out_total", (("platform", "web"),))] == 2
    assert got[("chorus_messages_in_total", (("platform", "web"),))] == 3
    assert got[("chorus_lock_wait_seconds_count", ())] == 2
    assert got[("chorus_llm_tokens_total", (("direction", "completion"),))] == 10  # 5 per answered turn
    assert got[("chorus_llm_tokens_total", (("direction", "prompt"),))] > 0
    assert got[("chorus_agent_cache_total", (("event", "built"),))] == 1
    assert got[("chorus_config_changes_total", (("source", "api"),))] == 1
    assert (got[("chorus_live_agents", ())], got[("chorus_queue_depth", ())]) == (1, 0)
    errors = {labels: value for (name, labels), value in got.items() if name == "chorus_turn_errors_total"}
    assert list(errors.values()) == [1]
    kinds = [e["kind"] for e in events["events"]]
    assert kinds.count("error") == 1 and kinds.count("compression") == 2
