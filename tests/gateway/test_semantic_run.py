"""`memory.provider: semantic` as `chorus run` builds it: recall reaches the model, failures fall back, doctor names it.

Embeddings come from the loopback fake's `/v1/embeddings` through the real
`openai` client; `memory.embeddings` leaves base_url and api_key null, so
the chat model's endpoint and key are used.
"""
from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import yaml
from structlog.testing import capture_logs

from agent.loop import RECALL_HEADER
from agent.memory.semantic import RECALL_LABEL
from gateway.doctor.plugins import check_plugins
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.daemon import start_daemon
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import chat, make_config
from tests.gateway.replicas import web_port
from tests.gateway.run_harness import run_like_chorus

PLAN = "we agreed to cancel the flight to Berlin on Friday"
TELEGRAM_ONLY = {"web": {"enabled": False}, "telegram": {"allowed_users": ["u1", "u2"]}}


def system_prompt(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str(messages[0]["content"])


async def test_chorus_run_recalls_an_earlier_session_by_meaning(fake_openai: FakeOpenAI, home: Path, tmp_path: Path) -> None:
    """A paraphrase in a new session brings the earlier plan into the model's request as labelled context."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "home": str(home),
        "model": {"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test-not-real"},
        "platforms": {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
        "admin": {"host": "127.0.0.1", "port": 0}, "gateway": {"shutdown_grace_seconds": 1},
        "memory": {"provider": "semantic", "embeddings": {"model": "embed-small"}, "nudge_interval": 0,
                   "flush_min_turns": 0},
        "logging": {"format": "json", "level": "info"},
    }), encoding="utf-8")
    process, lines = await start_daemon(config)
    try:
        async with chat(web_port(lines)) as tab:
            await tab.say(PLAN)
            assert await tab.reply(timeout=30) == f"echo: {PLAN}"
            await tab.say("/new")
            await tab.reply(timeout=30)
            # The first turn is embedded after its reply is delivered, off the lane: ask until it has landed.
            for _attempt in range(5):
                await tab.say("did we call off the plane trip?")
                assert await tab.reply(timeout=30) == "echo: did we call off the plane trip?"
                if RECALL_HEADER in system_prompt(fake_openai.requests[-1]):
                    break
            await tab.say("/status")
            status = await tab.reply(timeout=30)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    prompt = system_prompt(fake_openai.requests[-1])
    assert f"{RECALL_HEADER}\n{RECALL_LABEL}\n" in prompt and PLAN in prompt.split(RECALL_LABEL)[1]
    assert RECALL_HEADER not in system_prompt(fake_openai.requests[0])
    assert {r["model"] for r in fake_openai.embedding_requests} == {"embed-small"}
    assert {h["Authorization"] for h in fake_openai.embedding_headers} == {"Bearer sk-test-not-real"}  # the model's
    assert "memory provider: semantic" in status


async def test_embeddings_down_the_turn_is_answered_and_the_failure_counted(fake_openai: FakeOpenAI, home: Path) -> None:
    """The endpoint answering 500: every turn is answered, each fallback is one log line and one count."""
    fake_openai.embeddings_status = 500
    telegram = FakePlatform("telegram")
    config = make_config(home, fake_openai.base_url, platforms=TELEGRAM_ONLY, memory={"provider": "semantic"})
    async with run_like_chorus(config, adapters={"telegram": telegram}) as (gateway, ops):
        with capture_logs() as logs:
            await telegram.inject("hello there")
            await telegram.wait_text("echo: hello there")
            await gateway.parts.runner.memory_synced()
    fell_back = [entry for entry in logs if entry["event"] == "semantic.fell_back"]
    count = ops.metrics.registry.get_sample_value(
        "chorus_plugin_errors_total", {"plugin": "semantic", "kind": "memory_provider"}
    )
    assert [entry["call"] for entry in fell_back] == ["query", "index"] and count == 2
    assert RECALL_HEADER not in system_prompt(fake_openai.requests[-1])
    assert "sk-test" not in str(fell_back)


async def test_doctor_reports_semantic_as_built_in(home: Path) -> None:
    config = make_config(home, "http://127.0.0.1:9/v1", memory={"provider": "semantic"})
    _engine, memory = await check_plugins(config)
    assert memory.ok and "using semantic (built in)" in memory.detail and "semantic" in memory.detail.split("installed:")[1]


async def test_embeddings_endpoint_and_key_of_their_own(fake_openai: FakeOpenAI, home: Path) -> None:
    """memory.embeddings.base_url and api_key, when set, are used instead of the chat model's."""
    async with FakeOpenAI() as embeddings:
        telegram = FakePlatform("telegram")
        config = make_config(home, fake_openai.base_url, platforms=TELEGRAM_ONLY, memory={
            "provider": "semantic", "embeddings": {"base_url": embeddings.base_url, "api_key": "sk-embed-only"}})
        async with run_like_chorus(config, adapters={"telegram": telegram}) as (gateway, _ops):
            await telegram.inject("hello there")
            await telegram.wait_text("echo: hello there")
            await gateway.parts.runner.memory_synced()
    assert fake_openai.embedding_requests == [] and len(embeddings.embedding_requests) == 2  # the query, the turn
    assert {h["Authorization"] for h in embeddings.embedding_headers} == {"Bearer sk-embed-only"}
    assert {r["model"] for r in embeddings.embedding_requests} == {"text-embedding-3-small"}
