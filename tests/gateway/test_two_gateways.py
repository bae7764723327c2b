"""Must-show: two gateway processes sharing one Redis never run one session in both and answer each delivery once."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gateway.build import build_model
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import CountingClient, chat, make_config, started, web_port


async def test_two_gateways_share_redis_without_double_runs(
    fake_openai: FakeOpenAI, home: Path, redis_url: str, redis_prefix: str
) -> None:
    """Same delivery ids fed to both are answered once; one session's turns never overlap across processes."""

    def responder(request: dict[str, Any]) -> Reply:
        return Reply(content=f"re: {request['messages'][-1]['content']}", delay_seconds=0.02)

    fake_openai.responder = responder
    config = make_config(home, fake_openai.base_url, redis={"url": redis_url, "key_prefix": redis_prefix})
    counter = CountingClient(build_model(config))
    async with started(config, model=counter, node="gw-a") as gw_a, started(config, model=counter, node="gw-b") as gw_b:
        chat_id = "sharedchat"
        async with chat(web_port(gw_a), chat_id) as tab_a, chat(web_port(gw_b), chat_id) as tab_b:
            # Duplicates: the same client id (= the same delivery id) to BOTH gateways.
            for i in range(8):
                await asyncio.gather(tab_a.say(f"d{i}", client_id=f"dup-{i}"), tab_b.say(f"d{i}", client_id=f"dup-{i}"))
            # Distinct deliveries of the same session to each gateway: both must run turns of it.
            for i in range(4):
                await tab_a.say(f"a{i}")
                await tab_b.say(f"b{i}")

            got: list[str] = []
            all_in = asyncio.Event()

            async def collect(tab: Any) -> None:
                while True:
                    text = await tab.reply(timeout=20.0)
                    if text.startswith("re: "):
                        got.append(text)
                        if len(got) >= 16:
                            all_in.set()

            readers = [asyncio.create_task(collect(tab_a)), asyncio.create_task(collect(tab_b))]
            await asyncio.wait_for(all_in.wait(), 20.0)
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
    expected = sorted([f"re: d{i}" for i in range(8)] + [f"re: a{i}" for i in range(4)] + [f"re: b{i}" for i in range(4)])
    assert sorted(got) == expected
    assert len(fake_openai.requests) == 16
    assert counter.peak == 1
    assert gw_a.decisions.get("duplicate", 0) + gw_b.decisions.get("duplicate", 0) == 8
    assert gw_a.parts.runner.turns_run >= 4 and gw_b.parts.runner.turns_run >= 4
    # Both processes wrote one transcript (shared home); every question is followed by its own answer.
    store = gw_a.parts.store
    store.open()
    try:
        session = store.active_session("agent:default:web:dm:sharedchat")
        assert session is not None
        stored = store.active_messages(session.id)
    finally:
        store.close()
    pairs = [(stored[i].text, stored[i + 1].text) for i in range(0, len(stored), 2)]
    assert len(stored) == 32 and all(answer == f"re: {question}" for question, answer in pairs)
