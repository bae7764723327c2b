"""Must-show: a real IRC log replayed as busy group traffic stays below the hard message limit."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import DATA_DIR
from tests.fakes.openai_server import FakeOpenAI, Reply, echo_responder
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus

LIMIT = 60
MENTION_EVERY = 20
SUMMARY_PROMPT = "You write handoff summaries"


def _irc_lines() -> list[tuple[str, str]]:
    record = json.loads((DATA_DIR / "irc_ubuntu_meeting_2.jsonl").read_text(encoding="utf-8").splitlines()[0])
    lines = []
    for message in record["messages"]:
        name = message["name"]
        text = message["content"].removeprefix(f"[{name}] ")
        lines.append((name, text))
    return lines


def _is_summary(request: dict[str, Any]) -> bool:
    first = request["messages"][0]
    return first["role"] == "system" and str(first["content"]).startswith(SUMMARY_PROMPT)


def _model(request: dict[str, Any]) -> Reply:
    """A summary model that summarises (echoing the whole prompt back would never shrink anything)."""
    if _is_summary(request):
        return Reply(content="## Goal\nUbuntu meeting chatter in #ubuntu-meeting.\n## Progress\nScheduling talk.")
    return echo_responder(request)


async def test_irc_replay_every_answer_is_sent_fewer_messages_than_the_limit(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """Unmentioned lines are recorded; past the limit each answer is sent < limit messages and nothing is lost."""
    lines = _irc_lines()
    fake_openai.responder = _model
    config = make_config(
        home, fake_openai.base_url,
        platforms={"web": {"enabled": False}, "telegram": {"allow_all_users": True}},
        compression={"hygiene_hard_message_limit": LIMIT},
    )
    chat = FakePlatform("telegram")
    asked: list[str] = []
    async with run_like_chorus(config, adapters={"telegram": chat}) as (gateway, _ops):
        for number, (name, text) in enumerate(lines, start=1):
            mention = number % MENTION_EVERY == 0
            await chat.inject(text, chat_id="-100irc", chat_type="group", user_id=name, user_name=name,
                              mentions_bot=mention)
            if mention:
                asked.append(f"{name} (id {name}): {text}")
                await chat.wait_text(f"echo: {name} (id {name}): {text}", timeout=20)
        # A last question: the lane has recorded every line before it answers.
        await chat.inject("what did we decide?", chat_id="-100irc", chat_type="group", user_id="mdz", user_name="mdz",
                          mentions_bot=True)
        asked.append("mdz (id mdz): what did we decide?")
        await chat.wait_text("echo: mdz (id mdz): what did we decide?", timeout=20)
        store = gateway.parts.store
        session = store.active_session("agent:default:telegram:group:-100irc")
        assert session is not None
        stored = [m.message.text for m in store.session_messages(session.id)]
        hygiene_runs = gateway.parts.runner.hygiene_runs
    answers = [r for r in fake_openai.requests if not _is_summary(r)]
    summaries = [r for r in fake_openai.requests if _is_summary(r)]
    sizes = [len(r["messages"]) for r in answers]
    assert len(answers) == len(asked)
    assert max(sizes) < LIMIT, sizes
    assert [r["messages"][-1]["content"] for r in answers] == asked
    recorded = {f"{name} (id {name}): {text}" if number % MENTION_EVERY == 0
                else f"(not addressed to you) {name} (id {name}): {text}"
                for number, (name, text) in enumerate(lines, start=1)}
    assert recorded <= set(stored)  # every line is in the store (active or archived)
    assert len(summaries) >= len(lines) // LIMIT
    print(f"\nIRC replay: {len(lines)} lines, limit {LIMIT}: most messages sent {max(sizes)}, "
          f"compressions {len(summaries)} (hygiene runs {hygiene_runs})")
