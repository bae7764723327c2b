"""Must-show: SIGTERM in the middle of a turn loses nothing; the reply arrives after a restart."""
from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from gateway.intake.journal import InboundJournal
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.daemon import start_daemon, write_daemon_config
from tests.gateway.harness import chat
from tests.gateway.replicas import web_port


async def test_sigterm_mid_turn_then_restart_delivers_the_reply(fake_openai: FakeOpenAI, home: Path, tmp_path: Path) -> None:
    """A turn held at the model survives SIGTERM (exit 0) and is answered on the websocket after a restart."""
    gate = asyncio.Event()
    arrived = asyncio.Event()

    def held(request: dict[str, Any]) -> Reply:
        arrived.set()
        return Reply(content="never delivered", gate=gate)

    fake_openai.push(held)
    config = tmp_path / "config.yaml"
    write_daemon_config(config, home, fake_openai.base_url)
    process, first_log = await start_daemon(config)
    try:
        async with chat(web_port(first_log), "survivor") as tab:
            await tab.say("please remember me")
            await asyncio.wait_for(arrived.wait(), 30)
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 30) == 0
        assert any(line.get("event") == "gateway.unfinished_jobs" for line in first_log)
        assert InboundJournal(home / "inflight").pending_count() == 1

        process, second_log = await start_daemon(config)
        async with chat(web_port(second_log), "survivor") as tab:
            reply = await tab.answer_on_connect(timeout=30)
        assert reply == "echo: please remember me"
        assert any(line.get("event") == "journal.replay" for line in second_log)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
        assert InboundJournal(home / "inflight").pending_count() == 0
    finally:
        gate.set()
        if process.returncode is None:
            process.kill()
            await process.wait()
