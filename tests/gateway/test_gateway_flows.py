"""Gateway behaviour through a scripted platform: allowlists, triggers, commands, busy handling, failures."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gateway.i18n import say
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config, started

PLATFORM = "telegram"  # a fake in the shape of a real platform, so its access rules come from the config


def _config(home: Path, fake: FakeOpenAI, **platform: Any) -> Any:
    access = {"allowed_users": ["u1"], **platform}
    return make_config(home, fake.base_url, platforms={"web": {"enabled": False}, "telegram": access})


async def test_unknown_sender_is_refused_once_then_ignored(fake_openai: FakeOpenAI, home: Path) -> None:
    """A sender not on the allowlist gets one short refusal, then silence; the model is never asked."""
    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai), adapters={PLATFORM: chat}) as gateway:
        await chat.inject("hi", user_id="stranger", delivery_id="d1")
        await chat.inject("hello??", user_id="stranger", delivery_id="d2")
        await chat.inject("ping", user_id="u1", delivery_id="d3")
        await chat.wait_text("echo: ping")
    assert chat.texts() == [say("en", "access.refused", user_id="stranger"), "echo: ping"]
    assert len(fake_openai.requests) == 1
    assert gateway.decisions == {"refuse": 1, "deny": 1, "respond": 1}


async def test_unknown_sender_silent_mode_sends_nothing(fake_openai: FakeOpenAI, home: Path) -> None:
    """With gateway.unknown_sender: silent, an unknown sender gets no answer at all."""
    chat = FakePlatform(PLATFORM)
    config = make_config(
        home, fake_openai.base_url, platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
        gateway={"unknown_sender": "silent"},
    )
    async with started(config, adapters={PLATFORM: chat}):
        await chat.inject("hi", user_id="stranger")
        await chat.inject("ping", user_id="u1")
        await chat.wait_text("echo: ping")
    assert chat.texts() == ["echo: ping"]


async def test_group_context_is_recorded_and_named_until_the_bot_is_mentioned(fake_openai: FakeOpenAI, home: Path) -> None:
    """Unmentioned group lines are kept as labelled context with the sender's name and id; a mention gets an answer."""
    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai, allow_all_users=True), adapters={PLATFORM: chat}):
        await chat.inject("the deploy is at 5pm", chat_id="g1", chat_type="group", user_name="bob", user_id="b")
        await chat.inject("when is the deploy?", chat_id="g1", chat_type="group", mentions_bot=True)
        await chat.wait_text("echo:")
    sent = fake_openai.requests[0]["messages"]
    assert [m["content"] for m in sent[1:]] == [
        "(not addressed to you) bob (id b): the deploy is at 5pm", "alice (id u1): when is the deploy?"]
    assert len(fake_openai.requests) == 1


async def test_commands_answer_at_once_while_a_turn_is_busy(fake_openai: FakeOpenAI, home: Path) -> None:
    """/status and /help answer while the model is still working; /stop cancels the turn."""
    gate = asyncio.Event()
    arrived = asyncio.Event()

    def held(_request: dict[str, Any]) -> Reply:
        arrived.set()
        return Reply(content="late", gate=gate)

    fake_openai.push(held)
    chat = FakePlatform(PLATFORM)
    try:
        async with started(_config(home, fake_openai), adapters={PLATFORM: chat}):
            await chat.inject("think hard")
            await asyncio.wait_for(arrived.wait(), 10)
            await chat.inject("/status")
            status = await chat.wait_text("compression threshold")
            await chat.inject("/help")
            await chat.wait_text("/compress")
            await chat.inject("/stop")
            await chat.wait_text("stopped.")
            await chat.inject("after stop")
            await chat.wait_text("echo: after stop")
    finally:
        gate.set()
    assert "working on a reply" in status.text
    assert "late" not in chat.texts()


async def test_interrupt_mode_cancels_the_running_turn(fake_openai: FakeOpenAI, home: Path) -> None:
    """In interrupt mode a new message stops the running turn, and only the new one is answered."""
    gate = asyncio.Event()
    arrived = asyncio.Event()

    def held(_request: dict[str, Any]) -> Reply:
        arrived.set()
        return Reply(content="old answer", gate=gate)

    fake_openai.push(held)
    chat = FakePlatform(PLATFORM)
    config = make_config(
        home, fake_openai.base_url, platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
        gateway={"busy_input_mode": "interrupt"},
    )
    try:
        async with started(config, adapters={PLATFORM: chat}):
            await chat.inject("first")
            await asyncio.wait_for(arrived.wait(), 10)
            await chat.inject("second")
            await chat.wait_text("echo: second")
    finally:
        gate.set()
    assert "old answer" not in chat.texts()
    assert any("stopping the previous reply" in t for t in chat.texts())


async def test_failed_turn_tells_the_chat_without_internals(fake_openai: FakeOpenAI, home: Path) -> None:
    """A model failure (retries used up) becomes one short line: no status code, no stack trace, no key."""
    fake_openai.push(Reply(status=500))
    chat = FakePlatform(PLATFORM)
    config = make_config(home, fake_openai.base_url, platforms={"web": {"enabled": False}, "telegram": {
        "allowed_users": ["u1"]}}, model={"retry": {"max_attempts": 1}})
    async with started(config, adapters={PLATFORM: chat}):
        await chat.inject("hello")
        await chat.wait_text("/retry")
        await chat.inject("again")
        await chat.wait_text("echo: again")
    assert chat.texts() == [say("en", "turn.unavailable"), "echo: again"]
    assert not any(word in say("en", "turn.unavailable") for word in ("500", "Traceback", "sk-"))


async def test_new_starts_a_fresh_session(fake_openai: FakeOpenAI, home: Path) -> None:
    """/new ends the session: the next message is sent without the earlier turns."""
    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai), adapters={PLATFORM: chat}):
        await chat.inject("remember 42")
        await chat.wait_text("echo: remember 42")
        await chat.inject("/new")
        await chat.wait_text("new conversation")
        await chat.inject("what number?")
        await chat.wait_text("echo: what number?")
    assert [m["content"] for m in fake_openai.requests[-1]["messages"][1:]] == ["what number?"]


async def test_same_delivery_twice_is_answered_once(fake_openai: FakeOpenAI, home: Path) -> None:
    """A platform redelivery (same delivery id) is processed once."""
    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai), adapters={PLATFORM: chat}) as gateway:
        await chat.inject("once", delivery_id="same")
        await chat.inject("once", delivery_id="same")
        await chat.inject("marker", delivery_id="other")
        await chat.wait_text("echo: marker")
    assert [t for t in chat.texts() if not t.startswith("queued")] == ["echo: once", "echo: marker"]
    assert gateway.decisions["duplicate"] == 1


async def test_compress_command_runs_in_order_and_reports_the_figures(fake_openai: FakeOpenAI, home: Path) -> None:
    """/compress waits for the session's turn, forces a compression and reports tokens before → after."""
    def responder(request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]["content"]
        if str(last).startswith("note "):
            return Reply(content=f"noted {last} " + "with a long explanation of what that means " * 8)
        return Reply(content="## Goal\nkeep notes\n## Completed actions\nnoted many things")  # the summary

    fake_openai.responder = responder
    chat = FakePlatform(PLATFORM)
    config = make_config(
        home, fake_openai.base_url,
        model={"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test", "context_length": 8192},
        platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
    )
    async with started(config, adapters={PLATFORM: chat}):
        for i in range(30):
            await chat.inject(f"note {i}: the value of setting {i} is {i * 7}")
        await chat.inject("/compress")
        result = await chat.wait_text("context compressed:", timeout=30)
        await chat.inject("/status")
        status = await chat.wait_text("compressions so far", timeout=10)
    answers = [t for t in chat.texts() if t.startswith("noted")]
    assert len(answers) == 30 and chat.texts().index(result.text) > chat.texts().index(answers[-1])
    assert "compressions so far: 1" in status.text


async def test_one_canonical_line_per_turn(fake_openai: FakeOpenAI, home: Path) -> None:
    """Each turn logs turn.finished with latency, tokens, compressions and the bound session fields."""
    import structlog

    chat = FakePlatform(PLATFORM)
    with structlog.testing.capture_logs() as logs:
        async with started(_config(home, fake_openai), adapters={PLATFORM: chat}):
            await chat.inject("hello")
            await chat.wait_text("echo: hello")
    finished = [line for line in logs if line["event"] == "turn.finished"]
    assert len(finished) == 1
    line = finished[0]
    assert {"latency_ms", "prompt_tokens", "completion_tokens", "compressions"} <= set(line)
    assert line["compressions"] == 0 and line["prompt_tokens"] > 0


async def test_messages_arriving_during_shutdown_are_answered_after_restart(fake_openai: FakeOpenAI, home: Path) -> None:
    """A turn cut by the grace period and a message that came in meanwhile are both answered by the next process."""
    gate = asyncio.Event()
    arrived = asyncio.Event()

    def held(_request: dict[str, Any]) -> Reply:
        arrived.set()
        return Reply(content="never sent", gate=gate)

    fake_openai.push(held)
    config = make_config(
        home, fake_openai.base_url, platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
        gateway={"shutdown_grace_seconds": 0.3},
    )
    first = FakePlatform(PLATFORM)
    try:
        async with started(config, adapters={PLATFORM: first}) as gateway:
            await first.inject("in flight", delivery_id="t1")
            await asyncio.wait_for(arrived.wait(), 10)
            stopping = asyncio.create_task(gateway.stop())
            await first.inject("late arrival", delivery_id="t2")
            await stopping
        second = FakePlatform(PLATFORM)
        async with started(config, adapters={PLATFORM: second}):
            await second.wait_text("echo: late arrival")
            await second.wait_text("echo: in flight")
    finally:
        gate.set()
    assert "never sent" not in first.texts() + second.texts()
    assert sorted(t for t in second.texts() if t.startswith("echo")) == ["echo: in flight", "echo: late arrival"]
