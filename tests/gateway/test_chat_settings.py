"""Persona, per-chat model and prompt overrides, `/model`, `/usage`, `/undo`, through the web chat and the real client."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from adapters.base import InboundMessage
from agent.prompt import DEFAULT_BASE_PROMPT
from gateway.admin.wiring import Operations
from gateway.build import build_gateway
from gateway.config import load_config
from gateway.i18n import say
from gateway.intake.routing import Route, route
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import chat, make_config, running, started, web_port


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def system_text(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


async def test_the_default_prompt_and_its_source(tmp_path: Path, fake: FakeOpenAI) -> None:
    """No persona configured: the built-in prompt, and /status says "default"."""
    async with started(make_config(tmp_path, fake.base_url)) as gateway, chat(web_port(gateway)) as client:
        await client.say("hi")
        await client.reply()
        await client.say("/status")
        status = await client.reply()
    assert system_text(fake.requests[0]).startswith(DEFAULT_BASE_PROMPT)
    assert "system prompt: default" in status
    assert "model: fake-model" in status


async def test_a_configured_persona_with_a_chat_override(tmp_path: Path, fake: FakeOpenAI) -> None:
    """`agent.system_prompt` for every chat; `chats."web:X".system_prompt` replaces it for chat X only."""
    config = make_config(
        tmp_path, fake.base_url,
        agent={"system_prompt": "You are Polly, the team's parrot."},
        chats={"web:special": {"system_prompt": "You are the release bot."}},
    )
    async with started(config) as gateway:
        async with chat(web_port(gateway), "special") as client:
            await client.say("hi")
            await client.reply()
            await client.say("/status")
            special_status = await client.reply()
        async with chat(web_port(gateway), "plain") as client:
            await client.say("hi")
            await client.reply()
            await client.say("/status")
            plain_status = await client.reply()
    assert system_text(fake.requests[0]).startswith("You are the release bot.")
    assert system_text(fake.requests[1]).startswith("You are Polly, the team's parrot.")
    assert "system prompt: chat override" in special_status
    assert "system prompt: config" in plain_status


async def test_a_prompt_file_relative_to_the_config_reloads_for_new_sessions(tmp_path: Path, fake: FakeOpenAI) -> None:
    """`agent.system_prompt_file` is read relative to the config file; a reload reaches the next new session,
    while the running session keeps its frozen prompt."""
    (tmp_path / "persona.md").write_text("You are Ada, version one.", encoding="utf-8")
    raw = {
        "home": str(tmp_path / "home"),
        "model": {"name": "fake-model", "base_url": fake.base_url, "api_key": "sk-test"},
        "platforms": {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
        "memory": {"nudge_interval": 0, "flush_min_turns": 0},
        "agent": {"system_prompt_file": "persona.md"},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    config = load_config(path)
    ops = Operations.create(config, path=path)
    gateway = build_gateway(config, engine=ops.engine(), model_engine=ops.model_engine())
    async with running(gateway):
        ops.attach(gateway, token=None, tap_logs=False)
        async with chat(web_port(gateway), "c1") as client:
            await client.say("one")
            await client.reply()
            (tmp_path / "persona.md").write_text("You are Ada, version two.", encoding="utf-8")
            raw["chats"] = {"web:c1": {"require_mention": False}}  # any change makes the reload apply
            path.write_text(yaml.safe_dump(raw), encoding="utf-8")
            ops.live.reload()
            await client.say("two")
            await client.reply()
            await client.say("/new")
            await client.reply()
            await client.say("three")
            await client.reply()
            await client.say("/status")
            status = await client.reply()
        ops.detach()
    assert [system_text(r).split("\n")[0] for r in fake.requests] == [
        "You are Ada, version one.", "You are Ada, version one.", "You are Ada, version two.",
    ]
    assert "system prompt: file" in status


async def test_a_per_chat_model_override(tmp_path: Path, fake: FakeOpenAI) -> None:
    """`chats."web:X".model` sends chat X's requests to that model; other chats keep `model.name`."""
    config = make_config(
        tmp_path, fake.base_url, model={"allowed": ["big-model"]}, chats={"web:x": {"model": "big-model"}},
    )
    async with started(config) as gateway:
        for chat_id in ("x", "y"):
            async with chat(web_port(gateway), chat_id) as client:
                await client.say("hi")
                await client.reply()
    assert [r["model"] for r in fake.requests] == ["big-model", "fake-model"]


async def test_model_command_shows_switches_and_persists(tmp_path: Path, fake: FakeOpenAI) -> None:
    """/model lists the choices; /model NAME switches the chat (kept across a restart); unknown names are refused."""
    config = make_config(tmp_path, fake.base_url, model={
        "allowed": ["big-model"], "fallbacks": [{"name": "small-model", "context_length": 8192}],
    })
    async with started(config) as gateway, chat(web_port(gateway), "m") as client:
        await client.say("/model")
        shown = await client.reply()
        await client.say("/model nonsense")
        refused = await client.reply()
        await client.say("/model small-model")
        switched = await client.reply()
        await client.say("hello")
        await client.reply()
        agent = gateway.parts.agents.peek(web_route("m"))
        window = agent.engine.context_length if agent is not None else None
    async with started(config) as gateway, chat(web_port(gateway), "m") as client:
        await client.say("again")
        await client.reply()
    assert shown == "model: fake-model\nother choices: big-model, small-model"
    assert refused == "nonsense is not one of this chat's models: fake-model, big-model, small-model"
    assert switched == "switched this chat to small-model."
    assert [r["model"] for r in fake.requests] == ["small-model", "small-model"]
    assert window == 8192


def web_route(chat_id: str) -> Route:
    message = InboundMessage(platform="web", chat_id=chat_id, chat_type="dm", user_id="u", user_name="u", text="",
                             message_id="1", timestamp=0.0)
    return route(message, profile="default", group_sessions_per_user=False)


async def test_usage_counts_this_session_and_the_chat(tmp_path: Path, fake: FakeOpenAI) -> None:
    """/usage: the session's tokens, and the chat's all-time tokens that survive /new."""
    fake.push(Reply(content="a", prompt_tokens=100, completion_tokens=5),
              Reply(content="b", prompt_tokens=200, completion_tokens=7))
    async with started(make_config(tmp_path, fake.base_url)) as gateway, chat(web_port(gateway)) as client:
        await client.say("one")
        await client.reply()
        await client.say("/new")
        await client.reply()
        await client.say("two")
        await client.reply()
        await client.say("/usage")
        usage = await client.reply()
    assert usage == (
        "this conversation: 207 tokens (200 prompt, 7 completion, 1 request)\n"
        "this chat, all time: 312 tokens (300 prompt, 12 completion, 2 requests)"
    )


async def test_undo_removes_the_last_exchange_from_session_and_store(tmp_path: Path, fake: FakeOpenAI) -> None:
    """/undo drops the last user message and the answer; the next request and the store no longer have them."""
    async with started(make_config(tmp_path, fake.base_url)) as gateway, chat(web_port(gateway), "u") as client:
        await client.say("keep this")
        await client.reply()
        await client.say("forget this")
        await client.reply()
        await client.say("/undo")
        undone = await client.reply()
        stored = gateway.parts.store.active_messages(gateway.parts.store.list_sessions()[0].session.id)
        await client.say("next")
        await client.reply()
    assert undone == "removed the last exchange (2 messages) from this conversation."
    assert [m.text for m in stored] == ["keep this", "echo: keep this"]
    sent = [m["content"] for m in fake.requests[-1]["messages"][1:]]
    assert sent == ["keep this", "echo: keep this", "next"]


async def test_undo_is_refused_while_a_turn_runs(tmp_path: Path, fake: FakeOpenAI) -> None:
    """/undo during a reply gets a polite line and removes nothing."""
    gate = asyncio.Event()
    fake.push(Reply(content="slow", gate=gate))
    async with started(make_config(tmp_path, fake.base_url)) as gateway, chat(web_port(gateway)) as client:
        await client.say("take your time")
        await fake.wait_for_request()
        await client.say("/undo")
        refused = await client.reply()
        gate.set()
        await client.reply()
        assert len(gateway.parts.store.active_messages(gateway.parts.store.list_sessions()[0].session.id)) == 2
    assert refused == say("en", "undo.busy")
