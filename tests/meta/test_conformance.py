"""Honest contracts: every implementation and wrapper has every member its Protocol or base class declares.

A wrapper that does not forward a capability drops the feature silently (that is how idle compaction once
died under `chorus run`), so each wrapper is checked member by member here.
"""
from __future__ import annotations

import inspect

import pytest

from adapters.base import PlatformAdapter
from adapters.console import ConsoleAdapter
from adapters.discord import DiscordAdapter
from adapters.slack import SlackAdapter
from adapters.telegram import TelegramAdapter
from adapters.web import WebAdapter
from agent.context.engine import ContextEngine
from gateway.admin.tuning import LiveEngine
from gateway.intake.poller import LeasedAdapter
from tests.gateway.fake_platform import FakePlatform


def _protocol_members(protocol: type) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {name for name, _ in inspect.getmembers(protocol) if not name.startswith("_")}
    return names


@pytest.mark.parametrize(
    "implementation", [ConsoleAdapter, DiscordAdapter, SlackAdapter, TelegramAdapter, WebAdapter, LeasedAdapter, FakePlatform]
)
def test_every_adapter_has_every_platform_adapter_member(implementation: type) -> None:
    members = _protocol_members(PlatformAdapter)
    missing = {
        name for name in members
        if not hasattr(implementation, name) and name not in implementation.__init__.__code__.co_names
    }
    assert missing == set()


def test_live_engine_forwards_every_engine_member() -> None:
    """`LiveEngine` wraps the configured engine: each public member of `ContextEngine` is its own, not the base's."""
    declared = {name for name, _ in inspect.getmembers(ContextEngine) if not name.startswith("_")}
    inherited = {name for name in declared if name not in LiveEngine.__dict__}
    assert inherited == set()
