"""Must-show: DM round trips through the web adapter's real websocket and the real OpenAI client."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.base import ChatTarget
from gateway.build import build_model
from gateway.delivery.outbound import STREAM_CURSOR, EditThrottle
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import CountingClient, chat, make_config, started, web_port


async def test_dm_round_trip(fake_openai: FakeOpenAI, home: Path) -> None:
    """A message typed in the web chat is answered by the model, and the turn is stored."""
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        async with chat(web_port(gateway)) as client:
            await client.say("hello chorus")
            assert await client.reply() == "echo: hello chorus"
        sent = fake_openai.requests[0]["messages"]
        assert (sent[0]["role"], sent[-1]) == ("system", {"role": "user", "content": "hello chorus"})
        session = gateway.parts.store.active_session(f"agent:default:web:dm:{client.chat_id}")
        assert session is not None
        stored = gateway.parts.store.active_messages(session.id)
        assert [(m.role, m.text) for m in stored] == [("user", "hello chorus"), ("assistant", "echo: hello chorus")]


async def test_twenty_quick_messages_answered_in_order_one_run_at_a_time(fake_openai: FakeOpenAI, home: Path) -> None:
    """20 messages sent at once to one session are all answered, in order, never two model runs at once."""
    order: list[str] = []

    def responder(request: dict[str, Any]) -> Reply:
        text = request["messages"][-1]["content"]
        order.append(text)
        return Reply(content=f"answer to {text}", delay_seconds=0.01)

    fake_openai.responder = responder
    config = make_config(home, fake_openai.base_url)
    client = CountingClient(build_model(config))
    async with started(config, model=client) as gateway:
        async with chat(web_port(gateway)) as tab:
            for i in range(20):
                await tab.say(f"message {i}")
            replies = await tab.replies(20)
    assert replies == [f"answer to message {i}" for i in range(20)]
    assert order == [f"message {i}" for i in range(20)]
    assert client.peak == 1
    queued = [f["text"] for f in tab.frames if f["type"] == "message" and f["text"].startswith("queued")]
    assert len(queued) >= 1


async def test_slow_reply_streams_into_a_draft_edited_at_most_once_a_second(fake_openai: FakeOpenAI, home: Path) -> None:
    """A reply that takes a while shows a draft with a cursor, then the final text by an edit (throttled)."""
    text = "a streamed answer " * 20
    fake_openai.push(Reply(content=text, delay_seconds=0.7))
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        async with chat(web_port(gateway)) as tab:
            await tab.say("stream please")
            draft = await tab.next_frame("message")
            final = await tab.reply_edit(draft["id"])
    assert draft["text"].endswith(STREAM_CURSOR) and final == text
    edits = [f for f in tab.frames if f["type"] == "edit"]
    assert 1 <= len(edits) <= 2


def test_edit_throttle_allows_one_edit_per_interval() -> None:
    """Per chat: ready again only after the interval; other chats are independent."""
    now = [0.0]
    throttle = EditThrottle(clock=lambda: now[0])
    a, b = ChatTarget("web", "a"), ChatTarget("web", "b")
    throttle.mark(a)
    first = (throttle.ready(a, 1.0), throttle.ready(b, 1.0), round(throttle.delay(a, 1.0), 2))
    now[0] = 1.0
    assert first + (throttle.ready(a, 1.0),) == (False, True, 1.0, True)
