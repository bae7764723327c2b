"""The home channel's outage notices: an adapter stopping and coming back, the model failing for five minutes."""
from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.base import ChatTarget
from gateway.config import ChorusConfig, parse_config
from gateway.ops.events import TurnFailed, TurnFinished
from gateway.schedules.home import HomeChannel
from tests.gateway.schedules.support import Clock

HOME = ChatTarget(platform="telegram", chat_id="4242")
NOW = 1_796_558_400.0  # 2026-12-06 12:00 UTC


async def _settled(home: HomeChannel) -> None:
    while home._pending:  # noqa: SLF001 - the notices scheduled from synchronous callers
        await asyncio.gather(*home._pending)  # noqa: SLF001


def _home(tmp_path: Path, config: ChorusConfig, clock: Clock) -> tuple[HomeChannel, list[tuple[ChatTarget, str]]]:
    said: list[tuple[ChatTarget, str]] = []

    async def notify(target: ChatTarget, message: str) -> None:
        said.append((target, message))

    home = HomeChannel(lambda: config, home=tmp_path, clock=clock)
    home.bind(notify)
    return home, said


async def test_an_adapter_down_and_back_is_told_once_each(tmp_path: Path) -> None:
    home, said = _home(tmp_path, parse_config({"gateway": {"home_channel": "telegram:4242"}}), Clock(NOW))
    home.adapters({"discord": "no gateway events for 90 s"})
    home.adapters({"discord": "no gateway events for 91 s"})
    home.adapters({})
    await _settled(home)
    assert said == [(HOME, "discord is not receiving messages: no gateway events for 90 s."),
                    (HOME, "discord is receiving messages again.")]


async def test_the_model_failing_for_five_minutes_is_told_once_and_its_return_too(tmp_path: Path) -> None:
    clock = Clock(NOW)
    home, said = _home(tmp_path, parse_config({"gateway": {"home_channel": "telegram:4242"}}), clock)
    failed = TurnFailed("telegram", "agent:default:telegram:dm:1", "ModelUnavailable")
    home.on_event(failed)
    home.on_event(TurnFailed("telegram", "k", "lock_busy"))  # not the model's fault
    clock.now += 299
    home.on_event(failed)
    await _settled(home)
    assert said == []
    clock.now += 1
    home.on_event(failed)
    home.on_event(failed)
    home.on_event(TurnFinished("telegram", "k", 1.0, None, 10, 2, True))
    await _settled(home)
    assert said == [(HOME, "The model has been failing for 5 minutes (ModelUnavailable)."),
                    (HOME, "The model is answering again.")]


async def test_nothing_is_sent_without_a_home_channel(tmp_path: Path) -> None:
    home, said = _home(tmp_path, parse_config({}), Clock(NOW))
    home.adapters({"slack": "socket closed"})
    await home.started(resumed=3)
    await home.started(resumed=3)  # a second start finds the first one's alive mark
    await _settled(home)
    assert said == []
