"""Provenance of note writes through the gateway: group members who are not admins, and turns that read tool output.

The fake OpenAI server plays a model that calls the `memory` tool (after `session_search` in the
tool-output case); the staged write is then listed and approved the way an operator does it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.memory.notes import NotesStore
from gateway.cli import main
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config, started

NOTE = "The team deploys on Fridays."
GROUP = "telegram:-100"
DONE = "<<done>>"


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _model(*, search_first: bool) -> Any:
    """A scripted model: (session_search →) memory add → a reply quoting the memory tool's result."""

    def respond(request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]
        if last["role"] == "user":
            if search_first:
                return Reply(content=None, tool_calls=[_call("session_search", {"query": "deploy"}, "call_s")])
            return Reply(content=None, tool_calls=[_call("memory", {"action": "add", "target": "memory",
                                                                    "content": NOTE}, "call_m")])
        if last.get("name") == "session_search" or last.get("tool_call_id") == "call_s":
            return Reply(content=None, tool_calls=[_call("memory", {"action": "add", "target": "memory",
                                                                    "content": NOTE}, "call_m")])
        return Reply(content=f"tool said: {last['content']} {DONE}")  # DONE last: a streamed preview lacks it

    return respond


def _telegram(home: Path, fake: FakeOpenAI, **memory: Any) -> Any:
    return make_config(
        home, fake.base_url, memory={"nudge_interval": 0, "flush_min_turns": 0, **memory},
        platforms={"web": {"enabled": False},
                   "telegram": {"allowed_users": ["u1", "boss"], "allowed_chats": ["-100"], "admins": ["boss"]}},
    )


async def _group_turn(fake: FakeOpenAI, config: Any, user_id: str) -> str:
    chat = FakePlatform("telegram")
    async with started(config, adapters={"telegram": chat}):
        await chat.inject("remember that we deploy on Fridays", chat_id="-100", chat_type="group", user_id=user_id,
                          mentions_bot=True)
        sent = await chat.wait_text(DONE)
    return sent.text


async def test_a_group_members_write_is_staged_and_an_operator_approves_it(
    fake_openai: FakeOpenAI, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Non-admin in a group: the model is told the write was staged; `chorus memory pending/approve` applies it."""
    fake_openai.responder = _model(search_first=False)
    config = _telegram(home, fake_openai)
    reply = await _group_turn(fake_openai, config, "u1")
    assert '"status": "staged"' in reply and "not saved yet" in reply and "not an admin" in reply
    notes = NotesStore(home, config.memory).chat(GROUP)
    assert [entry.text for entry in notes.snapshot().memory] == []
    [pending] = notes.pending()
    assert (pending.content, pending.origin) == (NOTE, "group_member")

    capsys.readouterr()  # the gateway's log lines
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump({"home": str(home)}), encoding="utf-8")
    assert main(["memory", "pending", "--chat", GROUP, "--config", str(config_file), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["id"], listed["origin"]) == (pending.id, "group_member")
    assert main(["memory", "approve", "--chat", GROUP, "--config", str(config_file), pending.id]) == 0
    assert [entry.text for entry in notes.snapshot().memory] == [NOTE]
    assert notes.pending() == []


async def test_an_admins_write_in_the_group_is_saved_at_once(fake_openai: FakeOpenAI, home: Path) -> None:
    """A sender listed in platforms.telegram.admins writes directly."""
    fake_openai.responder = _model(search_first=False)
    config = _telegram(home, fake_openai)
    reply = await _group_turn(fake_openai, config, "boss")
    assert '"status": "written"' in reply
    notes = NotesStore(home, config.memory).chat(GROUP)
    assert [entry.text for entry in notes.snapshot().memory] == [NOTE]
    assert notes.pending() == []


async def test_untrusted_writes_allow_and_block(fake_openai: FakeOpenAI, home: Path, tmp_path: Path) -> None:
    """`memory.untrusted_writes: allow` saves a member's write; `block` refuses it with the key named."""
    fake_openai.responder = _model(search_first=False)
    allowed = _telegram(home, fake_openai, untrusted_writes="allow")
    assert '"status": "written"' in await _group_turn(fake_openai, allowed, "u1")
    other = tmp_path / "other-home"
    blocked = _telegram(other, fake_openai, untrusted_writes="block")
    reply = await _group_turn(fake_openai, blocked, "u1")
    assert '"success": false' in reply and "memory.untrusted_writes: block" in reply
    assert NotesStore(other, blocked.memory).chat(GROUP).pending() == []


async def test_a_write_after_tool_output_in_a_direct_chat_is_staged(fake_openai: FakeOpenAI, home: Path) -> None:
    """In a DM, a memory write that follows a tool result in the same turn is staged as tool_output."""
    fake_openai.responder = _model(search_first=True)
    config = _telegram(home, fake_openai)
    chat = FakePlatform("telegram")
    async with started(config, adapters={"telegram": chat}):
        await chat.inject("look up when we deploy and remember it")
        sent = await chat.wait_text(DONE)
    assert '"status": "staged"' in sent.text and "tool output" in sent.text
    [pending] = NotesStore(home, config.memory).chat("telegram:c1").pending()
    assert pending.origin == "tool_output"


async def test_a_direct_chat_write_without_tool_output_is_saved(fake_openai: FakeOpenAI, home: Path) -> None:
    """The owner's own words in a DM are trusted: written at once."""
    fake_openai.responder = _model(search_first=False)
    config = _telegram(home, fake_openai)
    chat = FakePlatform("telegram")
    async with started(config, adapters={"telegram": chat}):
        await chat.inject("remember that we deploy on Fridays")
        sent = await chat.wait_text(DONE)
    assert '"status": "written"' in sent.text
    assert [e.text for e in NotesStore(home, config.memory).chat("telegram:c1").snapshot().memory] == [NOTE]
