"""Must-show: in a live group chat, values stated by several people survive several compressions verbatim.

A group on a platform fake (shaped like Telegram), several speakers, real IRC lines between the facts,
hygiene at a small hard message limit, and a summary model (the fake OpenAI) that keeps nothing:
every planted value must be in the request that answers the final question.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply, echo_responder
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config, started

PLATFORM = "telegram"
GROUP = "-100777"
DATA = Path(__file__).resolve().parents[1] / "data" / "irc_ubuntu_meeting_2.jsonl"
SPEAKERS = ("ann", "bob", "cy", "dee")
# (speaker, line) planted among the chatter; the facts are the lines (or the answer) verbatim.
PLANTED = (
    ("ann", "note for everyone: the value of the staging password is LX8NKL3"),
    ("bob", "the door code is KZ-3388-A"),
    ("cy", "release tag = QK-8972-F"),
    ("dee", "ok, set the vpn pin to 4471 please"),
    ("ann", "rollout token: 389DHG9"),
    ("bob", "we agreed on quika-vexro-93 for the meeting room"),
    ("cy", "der Wert für api quota ist 49284"),
    ("dee", "la valeur de canary slot est v2.3.4"),
    ("ann", "the vpn code is YTHFKSA"),
)
QUESTION = ("ann", "what's the backup key again?")
ANSWER = ("dee", "ZX-5521-K")
SUMMARY_MARKER = "You write handoff summaries"


def _chatter(count: int) -> list[str]:
    record = json.loads(DATA.read_text(encoding="utf-8").splitlines()[0])
    lines = [m["content"].split("] ", 1)[1] for m in record["messages"] if len(m["content"]) > 60]
    return lines[:count]


def _useless_summaries(request: dict[str, Any]) -> Reply:
    """The summary model keeps nothing; chat turns are echoed."""
    first = request["messages"][0].get("content") or ""
    if isinstance(first, str) and first.startswith(SUMMARY_MARKER):
        return Reply(content="## Goal\nNone.\n\n## Critical context\nNone.")
    return echo_responder(request)


async def test_group_facts_from_several_speakers_survive_several_compressions(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    fake_openai.responder = _useless_summaries
    config = make_config(
        home, fake_openai.base_url,
        model={"context_length": 8000},
        platforms={"web": {"enabled": False}, PLATFORM: {"allow_all_users": True}},
        compression={"hygiene_hard_message_limit": 30, "protect_last_n": 4, "target_ratio": 0.05},
    )
    chatter = _chatter(120)
    script: list[tuple[str, str]] = [(SPEAKERS[i % 4], line) for i, line in enumerate(chatter)]
    for offset, planted in enumerate(PLANTED):
        script.insert(6 + offset * 7, planted)
    script[70:70] = [QUESTION, ANSWER]
    chat = FakePlatform(PLATFORM)
    async with started(config, adapters={PLATFORM: chat}) as gateway:
        for index, (speaker, line) in enumerate(script, 1):
            await chat.inject(line, chat_id=GROUP, chat_type="group", user_id=speaker, user_name=speaker)
            if index % 10 == 0:
                await chat.inject(f"@bot ping {index}", chat_id=GROUP, chat_type="group", mentions_bot=True)
                await chat.wait_text(f"echo: alice (id u1): @bot ping {index}", timeout=20)
        await chat.inject("@bot list every value noted here", chat_id=GROUP, chat_type="group", mentions_bot=True)
        await chat.wait_text("echo: alice (id u1): @bot list every value noted here", timeout=20)
        hygiene_runs = gateway.parts.runner.hygiene_runs
    summaries = [r for r in fake_openai.requests if str(r["messages"][0].get("content", "")).startswith(SUMMARY_MARKER)]
    answering = fake_openai.requests[-1]
    assert answering["messages"][-1]["content"] == "alice (id u1): @bot list every value noted here"
    assert hygiene_runs >= 3 and len(summaries) >= 3
    sent = "\n".join(str(m.get("content") or "") for m in answering["messages"])
    missing = [line for _, line in PLANTED if line not in sent]
    assert missing == []
    assert f"{ANSWER[1]} (answer to ann (id ann): {QUESTION[1]})" in sent
    # Each fact keeps its speaker; most of the chatter itself is gone from the request.
    assert any(f"user:bob (id bob)]{gap}the door code is KZ-3388-A" in sent for gap in (" ", "\n> "))  # ledger or user words
    assert len(answering["messages"]) < len(script) // 3
