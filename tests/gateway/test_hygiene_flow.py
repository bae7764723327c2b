"""Must-show: a 6,000-message session triggers hygiene exactly once before the agent answers."""
from __future__ import annotations

from pathlib import Path

from agent.messages import Message, assistant, user
from agent.store import STATE_DB_NAME, SqliteSessionStore
from gateway.intake.routing import chat_scope, session_key
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.harness import chat, make_config, started, web_port

CHAT = "hygienechat"


def _seed(home: Path, count: int) -> None:
    key = session_key(profile="default", platform="web", kind="dm", chat_id=CHAT, thread_id=None, user_id=None)
    store = SqliteSessionStore(home / STATE_DB_NAME)
    store.open()
    try:
        session = store.ensure_session(key, platform="web", chat_id=chat_scope("web", CHAT))
        messages: list[Message] = []
        for i in range(count // 2):
            messages.append(user(f"question {i} about the deployment"))
            messages.append(assistant(f"answer {i}: it is fine"))
        store.append(session.id, messages)
    finally:
        store.close()


async def test_six_thousand_messages_hygiene_runs_once_before_the_answer(fake_openai: FakeOpenAI, home: Path) -> None:
    """Past the hard message limit, hygiene compresses once, then the model answers a small prompt."""
    _seed(home, 6000)
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        async with chat(web_port(gateway), CHAT) as client:
            await client.say("what is the status?")
            first = await client.reply()
            await client.say("and now?")
            second = await client.reply()
        runner = gateway.parts.runner
        assert (first, second) == ("echo: what is the status?", "echo: and now?")
        assert runner.hygiene_runs == 1
        chat_requests = [r for r in fake_openai.requests if r["messages"][-1]["content"] in ("what is the status?", "and now?")]
        assert len(chat_requests) == 2
        first_chat_index = fake_openai.requests.index(chat_requests[0])
        # The summary request(s) of the hygiene compression came before the first answer.
        assert first_chat_index >= 1
        assert len(chat_requests[0]["messages"]) < 2000  # the tail kept verbatim, far below 6,000
        session = gateway.parts.store.active_session(f"agent:default:web:dm:{CHAT}")
        assert session is not None
        stored = gateway.parts.store.active_messages(session.id)
        assert len(stored) < 2000 and stored[-1].text == "echo: and now?"
