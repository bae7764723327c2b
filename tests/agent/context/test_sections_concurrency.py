"""Handoff sections are built in a worker thread while the summary model works."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from agent.context import SummaryRequest
from agent.messages import Message
from agent.tokens import TokenCounter
from tests.agent.context.compressor_helpers import chat, make

WAIT_SECONDS = 5.0


class RecordingSection:
    """A section that notes the thread it was built on and signals that it ran."""

    title = "Probe"

    def __init__(self) -> None:
        self.built = threading.Event()
        self.thread: int | None = None

    def build(self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter) -> str | None:
        self.thread = threading.get_ident()
        self.built.set()
        return f"{len(dropped)} messages dropped"


class WaitsForSections:
    """A summary model that answers only once the section has been built (or gives up)."""

    def __init__(self, section: RecordingSection) -> None:
        self.section = section
        self.saw_section_first = False

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        self.saw_section_first = await asyncio.to_thread(self.section.built.wait, WAIT_SECONDS)
        return "## Goal\nkeep going"


async def test_sections_are_built_off_the_event_loop_while_the_model_works() -> None:
    """The section is ready before the model answers, it ran on another thread, and its block ends the summary."""
    section = RecordingSection()
    model = WaitsForSections(section)
    engine = make(summarizer=model, context_length=8_000, sections=[section])
    result = await engine.compress(chat(40), trigger="manual", force=True)
    assert (result.outcome, result.summary_kind, model.saw_section_first) == ("compressed", "llm", True)
    assert section.thread is not None and section.thread != threading.get_ident()
    assert result.summary_text is not None and "## Probe\n" in result.summary_text
