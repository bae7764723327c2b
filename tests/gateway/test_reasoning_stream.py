"""Reasoning never reaches a chat under `chorus run`: not in streamed edits, not in the reply, not in the store."""
from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus

SECRET = "the user seems impatient, keep it short"


def _config(home: Path, fake: FakeOpenAI, strip: bool = True) -> object:
    return make_config(home, fake.base_url, platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
                       agent={"strip_reasoning": strip})


async def test_think_tags_and_reasoning_deltas_never_reach_the_chat(fake_openai: FakeOpenAI, home: Path) -> None:
    """A streamed `<think>` block (split over 8-char deltas) and `reasoning_content` deltas are never shown."""
    fake_openai.push(Reply(content=f"<think>\n{SECRET}\n</think>\n\nThe deploy is at 5pm.", reasoning="private plan"))
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai), adapters={"telegram": chat}) as (gateway, _ops):  # type: ignore[arg-type]
        await chat.inject("when is the deploy?")
        await chat.wait_text("The deploy is at 5pm.")
        await chat.inject("thanks")  # the lane runs it after the first turn was persisted
        await chat.wait_text("echo: thanks")
        session = gateway.parts.store.active_session("agent:default:telegram:dm:c1")
        assert session is not None
        stored = [m.text for m in gateway.parts.store.active_messages(session.id)]
    assert fake_openai.requests[0]["stream"] is True
    shown = [o.text for o in chat.outgoing]
    assert not any(SECRET in text or "think>" in text or "private plan" in text for text in shown), shown
    assert [text for text in shown if text.startswith("The deploy")][-1] == "The deploy is at 5pm."
    assert stored[:2] == ["when is the deploy?", "The deploy is at 5pm."]


async def test_strip_reasoning_off_shows_the_raw_text(fake_openai: FakeOpenAI, home: Path) -> None:
    """agent.strip_reasoning: false leaves the content as the model sent it."""
    fake_openai.push(Reply(content=f"<think>{SECRET}</think>ok"))
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai, strip=False), adapters={"telegram": chat}):  # type: ignore[arg-type]
        await chat.inject("hi")
        await chat.wait_text("ok")
        await chat.wait_text(SECRET)
