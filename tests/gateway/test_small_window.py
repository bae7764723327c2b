"""A model whose real window is smaller than `model.context_length`, through `chorus run`'s construction."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.loop import DROPPED_NOTICE
from agent.model_windows import WINDOWS_FILE
from gateway.admin.gateway_backend import GatewayBackend
from gateway.i18n import say
from tests.fakes.openai_server import FakeOpenAI, Reply, echo_responder
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus

SUMMARY_PROMPT = "You write handoff summaries"
WINDOW = 3000
PARAGRAPH = ("The deployment pipeline builds the image, runs the migrations and then rolls the web pods one by one; "
             "the queue workers follow once the health checks pass. ") * 8


def _model(request: dict[str, Any]) -> Reply:
    first = request["messages"][0]
    if first["role"] == "system" and str(first["content"]).startswith(SUMMARY_PROMPT):
        return Reply(content="## Goal\nExplain the deployment.\n## Progress\nPipeline steps were described.")
    reply = echo_responder(request)
    reply.content = (reply.content or "")[:80]
    return reply


def _config(home: Path, fake: FakeOpenAI, **sections: Any) -> Any:
    return make_config(home, fake.base_url, platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
                       **sections)


async def _fill(chat: FakePlatform, turns: int) -> None:
    for number in range(turns):
        await chat.inject(f"step {number}: {PARAGRAPH}")
        await chat.wait_text(f"echo: step {number}:")


async def test_stated_window_is_learned_compressed_to_and_remembered(fake_openai: FakeOpenAI, home: Path) -> None:
    """The first overflow states 3000 tokens: compress under it, answer, show it, and keep it after a restart."""
    fake_openai.responder = _model
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai), adapters={"telegram": chat}) as (gateway, ops):
        await _fill(chat, 10)
        fake_openai.window = WINDOW  # the server was restarted with a 3K context
        await chat.inject("what happens after the migrations?")
        await chat.wait_text("echo: what happens after the migrations?")
        await chat.inject("/status")
        status = await chat.wait_text("tokens used")
        views = await GatewayBackend(gateway, events=ops.events, live=ops.live).sessions()  # the dashboard's data
    assert [view.context_length for view in views] == [WINDOW]
    assert fake_openai.overflows == 1
    assert "of 3,000" in status.text
    assert "model window 3,000 (learned from its errors; configured 128,000)" in status.text
    assert not any("Sorry" in o.text for o in chat.outgoing)
    saved = json.loads((home / WINDOWS_FILE).read_text())
    assert [entry["tokens"] for entry in saved.values()] == [WINDOW]
    # A restart remembers: the next answer needs no overflow first.
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai), adapters={"telegram": chat}) as (gateway, ops):
        assert ops.windows.active_window() == WINDOW
        await _fill(chat, 4)
    assert fake_openai.overflows == 1


async def test_unstated_window_shrinks_step_by_step(fake_openai: FakeOpenAI, home: Path) -> None:
    """llama.cpp without figures: the assumed window shrinks until the request fits, within max_attempts."""
    fake_openai.responder = _model
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai), adapters={"telegram": chat}) as (_gateway, ops):
        await _fill(chat, 10)
        fake_openai.window = WINDOW
        fake_openai.overflow_message = "the request exceeds the available context size, try increasing it"
        await chat.inject("and the workers?")
        await chat.wait_text("echo: and the workers?")
        learned = ops.windows.active_window()
    assert 1 <= fake_openai.overflows <= 3
    assert learned < 128_000


async def test_a_message_bigger_than_the_window_is_cut_and_the_user_told(fake_openai: FakeOpenAI, home: Path) -> None:
    """Nothing to compress and the message alone overflows: its middle is cut, one short line says so."""
    fake_openai.responder = _model
    fake_openai.window = WINDOW
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai), adapters={"telegram": chat}):
        await chat.inject("summarise this log: " + PARAGRAPH * 20)
        await chat.wait_text("echo: summarise this log:")
        notice = await chat.wait_text("shortened")
    assert notice.text == "Your message was too long for this model, so I shortened the largest part before answering."
    assert not any("Sorry" in o.text for o in chat.outgoing)
    sent = fake_openai.requests[-1]["messages"][-1]["content"]
    assert "characters cut to fit" in sent


def _long_answers(request: dict[str, Any]) -> Reply:
    """Summaries as `_model`; every answer names its step and is as long as a real one (about 100 tokens)."""
    first = request["messages"][0]
    if first["role"] == "system" and str(first["content"]).startswith(SUMMARY_PROMPT):
        return _model(request)
    asked = str([m for m in request["messages"] if m["role"] == "user"][-1]["content"])
    return Reply(content=f"answer to {asked.split(':')[0]}: " + PARAGRAPH[:400])


@pytest.mark.parametrize("window", [2048, 4096])
async def test_a_window_the_tool_schemas_fill_still_answers_every_message(
    fake_openai: FakeOpenAI, home: Path, window: int,
) -> None:
    """A local model served with a 2K or 4K context, counting the tool schemas as real servers do: compression
    alone leaves too little room, so the oldest turns are left out (one short line says so) and every message
    is answered, never "The model refused this request"."""
    fake_openai.responder = _long_answers
    fake_openai.count_tools = True
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai), adapters={"telegram": chat}):
        for number in range(12):
            await chat.inject(f"step {number}: " + PARAGRAPH[:400])
            await chat.wait_text(f"answer to step {number}:")
        fake_openai.window = window  # the server was restarted with a small context
        for number in range(12, 18):
            await chat.inject(f"step {number}: " + PARAGRAPH[:400])
            await chat.wait_text(f"answer to step {number}:")
    texts = [o.text for o in chat.outgoing]
    assert fake_openai.overflows >= 1
    assert not any(say("en", "turn.refused") in text or "Sorry" in text for text in texts)
    assert [n for n in range(18) if not any(t.startswith(f"answer to step {n}:") for t in texts)] == []
    if window == 2048:
        assert DROPPED_NOTICE in texts
