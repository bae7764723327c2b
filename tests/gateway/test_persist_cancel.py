"""A turn cancelled while its messages are being stored: the append still commits and the state is saved."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from adapters.base import InboundMessage
from agent.messages import Message, assistant, user
from gateway.intake.routing import route
from gateway.sessions.service import SessionService
from tests.gateway.harness import make_config, started

WAIT_SECONDS = 10.0


async def test_a_cancelled_turn_still_stores_its_messages_and_saves_its_state(tmp_path: Path) -> None:
    """As under `asyncio.shield`: the caller hears the cancellation at once, the append and the save finish."""
    config = make_config(tmp_path, "http://127.0.0.1:9/v1")
    async with started(config) as gateway:
        parts = gateway.parts
        entered, release = threading.Event(), threading.Event()

        class SlowStore:
            """The real store, whose batched append waits until the test lets it go."""

            def append_many(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None]:
                entered.set()
                release.wait(WAIT_SECONDS)
                return parts.store.append_many(batch)

        service = SessionService(agents=parts.agents, store=SlowStore(), lock=parts.coordinator.lock,  # type: ignore[arg-type]
                                 in_place=True)
        message = InboundMessage("web", "c1", "dm", "c1", "you", "hi", "1", 0.0)
        where = route(message, profile="default", group_sessions_per_user=False)
        agent = await parts.agents.get(where)
        agent.state.marks.failed_message = "only the save carries this"
        persisting = asyncio.create_task(
            service.persist_through(where, agent, compressed=False, new=[user("hi"), assistant("hello")])
        )
        assert await asyncio.to_thread(entered.wait, WAIT_SECONDS)
        persisting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await persisting
        release.set()
        await service.settle()
        assert parts.store.active_messages(agent.session_id)[-2:] == [user("hi"), assistant("hello")]
        saved = await parts.coordinator.agent_cache.load_state(parts.agents.cache_key(agent.session_id))
        assert saved is not None and saved["extra"]["failed_message"] == "only the save carries this"
