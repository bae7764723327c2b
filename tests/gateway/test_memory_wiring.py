"""Memory wiring: an external provider's prefetch reaches the model for one turn, sync gets the turn; notes in /memory."""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from agent.loop import RECALL_HEADER
from agent.memory.notes import NotesStore
from agent.memory.providers import MemoryProvider, ProviderRegistry
from agent.messages import Message
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config, started


class RecordingProvider(MemoryProvider):
    name = "recording"

    def __init__(self) -> None:
        self.prefetched: list[tuple[str, str | None, str]] = []
        self.synced: list[tuple[str, tuple[str, ...]]] = []
        self.synced_event = asyncio.Event()

    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        self.prefetched.append((chat_id, user_id, query))
        return "the user's dog is called Rex"

    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> None:
        self.synced.append((chat_id, tuple(m.text for m in messages)))
        self.synced_event.set()


async def test_provider_prefetch_is_shown_for_the_turn_and_the_turn_is_synced(fake_openai: FakeOpenAI, home: Path) -> None:
    """Prefetched text is in that turn's system prompt only; the finished turn is synced, scoped to the chat."""
    provider = RecordingProvider()
    chat = FakePlatform("telegram")
    config = make_config(
        home, fake_openai.base_url, memory={"provider": "recording", "nudge_interval": 0, "flush_min_turns": 0},
        platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
    )
    async with started(config, adapters={"telegram": chat}, providers=ProviderRegistry({"recording": lambda: provider})):
        await chat.inject("what is my dog called?")
        await chat.wait_text("echo:")
        await asyncio.wait_for(provider.synced_event.wait(), 10)
    system_prompt = fake_openai.requests[0]["messages"][0]["content"]
    assert f"{RECALL_HEADER}\nthe user's dog is called Rex" in system_prompt
    assert provider.prefetched == [("telegram:c1", "u1", "what is my dog called?")]
    assert provider.synced == [("telegram:c1", ("what is my dog called?", "echo: what is my dog called?"))]


async def test_memory_command_shows_this_chats_notes_and_the_snapshot_reaches_the_prompt(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """/memory lists the chat's notes; a new session's system prompt carries the frozen snapshot."""
    config = make_config(
        home, fake_openai.base_url, platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}}
    )
    notes = NotesStore(home, config.memory)
    assert notes.chat("telegram:c1").add("user", "prefers answers in French").ok
    chat = FakePlatform("telegram")
    async with started(config, adapters={"telegram": chat}):
        await chat.inject("/memory")
        shown = await chat.wait_text("French")
        await chat.inject("bonjour")
        await chat.wait_text("echo: bonjour")
    assert "prefers answers in French" in shown.text
    assert "prefers answers in French" in fake_openai.requests[0]["messages"][0]["content"]


async def test_background_review_runs_after_the_reply_is_delivered(fake_openai: FakeOpenAI, home: Path) -> None:
    """With memory.nudge_interval 1, a delivered turn starts a background review (its own model request)."""
    from tests.fakes.openai_server import Reply

    reviewed = asyncio.Event()

    def responder(request: dict[str, object]) -> Reply:
        messages = request["messages"]
        assert isinstance(messages, list)
        if "background reviewer" in str(messages[0].get("content")):
            reviewed.set()
            return Reply(content="nothing to save")
        return Reply(content=f"echo: {messages[-1]['content']}")

    fake_openai.responder = responder
    chat = FakePlatform("telegram")
    config = make_config(
        home, fake_openai.base_url, memory={"nudge_interval": 1, "flush_min_turns": 0},
        platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
    )
    async with started(config, adapters={"telegram": chat}):
        await chat.inject("I live in Lisbon")
        await chat.wait_text("echo: I live in Lisbon")
        await asyncio.wait_for(reviewed.wait(), 10)
    first_chat = next(i for i, r in enumerate(fake_openai.requests) if "background reviewer" not in str(r["messages"][0]))
    review = next(i for i, r in enumerate(fake_openai.requests) if "background reviewer" in str(r["messages"][0]))
    assert first_chat < review
