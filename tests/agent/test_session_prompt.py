"""The session's system prompt is built once and kept until what it is made of changes."""
from __future__ import annotations

from typing import Any

from agent.loop import LoopSettings
from agent.prompt import COMPACTION_NOTE
from agent.session import AgentState, SessionAgent
from tests.agent.context.compressor_helpers import make


class _NoModel:
    model = "none"

    async def complete(self, *_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("not called")

    async def close(self) -> None:
        return None


def test_the_system_prompt_is_kept_until_the_session_is_compacted_or_its_snapshot_changes() -> None:
    state = AgentState(session_id="s", snapshot="NOTES: likes tea")
    agent = SessionAgent(session_id="s", history=[], engine=make(), model=_NoModel(), tools=[],  # type: ignore[arg-type]
                         loop_settings=LoopSettings(), base_prompt="be brief", state=state)
    first = agent.system_prompt()
    assert first == "be brief\n\nNOTES: likes tea"
    assert agent.system_prompt() is first
    agent.engine.state.compression_count = 1
    assert agent.system_prompt() == f"be brief\n\nNOTES: likes tea\n\n{COMPACTION_NOTE}"
    agent.state.snapshot = "NOTES: likes coffee"
    assert agent.system_prompt() == f"be brief\n\nNOTES: likes coffee\n\n{COMPACTION_NOTE}"
