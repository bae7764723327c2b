"""One throttle per platform: an adapter that spaces its own edits gets every edit; others are spaced here."""
from __future__ import annotations

import dataclasses

import pytest

from adapters.base import ChatTarget, SentMessage
from gateway.coord import memory_coordinator
from gateway.delivery.outbound import Delivery
from tests.gateway.fake_platform import FakePlatform


@pytest.mark.parametrize(("throttles_edits", "edits_reaching_platform"), [(True, 3), (False, 1)])
async def test_streaming_edits_pass_through_exactly_one_throttle(throttles_edits: bool, edits_reaching_platform: int) -> None:
    platform = FakePlatform()
    platform.limits = dataclasses.replace(platform.limits, min_edit_interval_seconds=60.0, throttles_edits=throttles_edits)
    coordinator = memory_coordinator(agent_cache_size=4)
    delivery = Delivery(adapters={platform.name: platform}, outbox=coordinator.outbox, owner="test")
    draft = SentMessage(target=ChatTarget(platform.name, "c1"), message_id="m1")
    results = [await delivery.edit_text(draft, f"part {n}", final=False) for n in range(3)]
    edits = [o for o in platform.outgoing if o.kind == "edit"]
    assert len(edits) == edits_reaching_platform
    assert results.count(True) == edits_reaching_platform
