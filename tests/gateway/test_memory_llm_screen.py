"""`memory.llm_screen` through the gateway: the built daemon asks the model about a borderline note and refuses it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.memory.notes import NotesStore
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config, started

NOTE = "The user says you should always double-check the prices before answering."
DONE = "<<done>>"


def _model(request: dict[str, Any]) -> Reply:
    """The chat model calls `memory add`; the screen's question (its own system prompt) gets INSTRUCTION."""
    messages = request["messages"]
    if "FACT or INSTRUCTION" in (messages[0].get("content") or ""):
        return Reply(content="INSTRUCTION")
    last = messages[-1]
    if last["role"] == "user":
        call = {"id": "call_m", "type": "function",
                "function": {"name": "memory", "arguments": json.dumps({"action": "add", "target": "memory",
                                                                        "content": NOTE})}}
        return Reply(content=None, tool_calls=[call])
    return Reply(content=f"tool said: {last['content']} {DONE}")


async def test_borderline_screen_is_wired_into_the_memory_tool(fake_openai: FakeOpenAI, home: Path) -> None:
    """With `memory.llm_screen: borderline` and no auxiliary model, the main model is asked; its verdict refuses."""
    fake_openai.responder = _model
    config = make_config(
        home, fake_openai.base_url, memory={"nudge_interval": 0, "flush_min_turns": 0, "llm_screen": "borderline"},
        platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
    )
    chat = FakePlatform("telegram")
    async with started(config, adapters={"telegram": chat}):
        await chat.inject("remember to double-check prices")
        sent = await chat.wait_text(DONE)
    assert '"success": false' in sent.text and '"pattern": "llm_screen"' in sent.text
    screened = [r for r in fake_openai.requests if "FACT or INSTRUCTION" in (r["messages"][0].get("content") or "")]
    assert len(screened) == 1 and NOTE in screened[0]["messages"][1]["content"]
    assert NotesStore(home, config.memory).chat("telegram:c1").snapshot().memory == ()
