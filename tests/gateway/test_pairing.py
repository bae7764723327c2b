"""Pairing: an unknown Telegram DM sender gets a code; `chorus pairing approve` admits them without a restart."""
from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from gateway.admin import Operations
from gateway.cli import main
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram, group_chat, message, private_chat, user
from tests.gateway.harness import make_config, started


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


async def test_a_stranger_is_paired_through_the_cli(
    tmp_path: Path, fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """First DM: a code and no model call; after `chorus pairing approve CODE`, the next DM is answered."""
    home = tmp_path / "home"
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"home": str(home)}), encoding="utf-8")
    fake.push(Reply(content="Welcome aboard."))
    async with FakeTelegram() as tg:
        platforms = {"web": {"enabled": False}, "telegram": {
            "enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}", "pairing": True}}
        async with started(make_config(home, fake.base_url, platforms=platforms)):
            await tg.push_update(message=message(private_chat(555), "hello?", sender=user(555, "Eve", "eve")))
            prompt = await tg.wait_for_text(555, "pairing code")
            code = re.search(r"code is ([A-Z0-9]{8})", prompt)
            assert code is not None
            assert main(["pairing", "list", "--config", str(path)]) == 0
            listed = capsys.readouterr().out
            assert main(["pairing", "approve", code.group(1), "--platform", "telegram", "--config", str(path)]) == 0
            approved = capsys.readouterr().out
            await tg.push_update(message=message(private_chat(555), "now?", sender=user(555, "Eve", "eve")))
            answer = await tg.wait_for_text(555, "Welcome aboard.")
    assert f"{code.group(1)}  telegram  555 (Eve)" in listed
    assert approved == "approved 555 (Eve) on telegram\n"
    assert answer == "Welcome aboard."
    assert len(fake.requests) == 1
    assert fake.requests[0]["messages"][-1]["content"] == "now?"


def test_approving_an_unknown_code_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped code: exit 1 and a line saying how to list the pending ones."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"home": str(tmp_path / "home")}), encoding="utf-8")
    assert main(["pairing", "approve", "NOPE1234", "--platform", "telegram", "--config", str(path)]) == 1
    assert "chorus pairing list" in capsys.readouterr().out


async def test_allowlist_and_admins_follow_a_live_change(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A sender refused by the allowlist is answered after `platforms.telegram.allowed_users` changes at runtime;
    admins changed the same way apply to the next /new."""
    async with FakeTelegram() as tg:
        platforms = {"web": {"enabled": False}, "telegram": {
            "enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}", "admins": ["1"]}}
        config = make_config(tmp_path, fake.base_url, platforms=platforms)
        ops = Operations.create(config)
        async with started(config, engine=ops.engine()) as gateway:
            ops.attach(gateway, token=None, tap_logs=False)
            await tg.push_update(message=message(private_chat(777), "hi"))
            refused = await tg.wait_for_text(777, "not allowed")
            ops.live.update({"platforms.telegram.allowed_users": [777], "platforms.telegram.admins": [777]})
            await tg.push_update(message=message(private_chat(777), "hi again"))
            await tg.wait_for_text(777, "echo: hi again")
            chat = group_chat()
            await tg.push_update(message=message(chat, "/new", sender=user(777)))
            done = await tg.wait_for_text(chat["id"], "Started a new conversation")
            ops.detach()
    assert refused.startswith("Sorry, I'm not allowed")
    assert done.startswith("Started a new conversation")
