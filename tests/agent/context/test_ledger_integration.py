"""The fact ledger inside the real ContextCompressor: planted facts survive successive compressions."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent.context import ContextCompressor, HandoffSection, SummaryRequest
from agent.context._handoff import is_handoff
from agent.context.ledger import FactLedger
from agent.context.user_words import handoff_sections
from agent.messages import Message, user
from agent.session_files import read_sessions
from agent.settings import CompressionSettings
from agent.tokens import default_counter

DATA = Path(__file__).resolve().parents[2] / "data"
CONSTRAINT = "Never run the migrations against the production database."
OLD_PORT = "The staging API port is 8443."
NEW_PORT = "The staging API port is 9443."


class IrrelevantSummarizer:
    """A summary model that keeps nothing of what it was given."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        return "## Goal\nThe weather was discussed."


def _insert(messages: list[Message], near: int, text: str) -> None:
    """Insert a user message at the first index from `near` that does not split a tool group."""
    index = near
    while messages[index].role == "tool" or messages[index - 1].tool_calls:
        index += 1
    messages.insert(index, user(text))


def _session() -> list[Message]:
    messages = list(next(iter(read_sessions(DATA / "minisweagent_django_15957.jsonl"))).messages)
    _insert(messages, len(messages) * 3 // 4, "Thanks, carry on.")
    _insert(messages, len(messages) // 2, f"Update: {NEW_PORT}")
    _insert(messages, 8, f"Two things. {CONSTRAINT} {OLD_PORT}")
    return messages


async def _grow_and_compress(sections: Sequence[HandoffSection], steps: int = 4) -> tuple[list[Message], list[str]]:
    """Feed the session in `steps` growing chunks, forcing a compression after each."""
    messages = _session()
    summarizer = IrrelevantSummarizer()
    compressor = ContextCompressor(
        CompressionSettings(), context_length=16_000, counter=default_counter(), summarizer=summarizer, sections=sections
    )
    context: list[Message] = []
    outcomes: list[str] = []
    start = 0
    for step in range(1, steps + 1):
        end = len(messages) * step // steps
        while end < len(messages) and (messages[end].role == "tool" or messages[end - 1].tool_calls):
            end += 1
        context.extend(messages[start:end])
        start = end
        result = await compressor.compress(context, trigger="manual", force=True)
        outcomes.append(result.outcome)
        context = list(result.messages)
    assert summarizer.calls == outcomes.count("compressed")
    return context, outcomes


def _text(messages: Sequence[Message]) -> str:
    return "\n".join(message.text for message in messages)


async def test_planted_constraint_survives_successive_compressions_with_a_useless_summary() -> None:
    """With the ledger, a constraint from an early turn is still there verbatim after four compressions."""
    context, outcomes = await _grow_and_compress(handoff_sections(CompressionSettings()))
    assert outcomes == ["compressed"] * 4
    assert CONSTRAINT in _text(context)
    handoffs = [m for m in context if is_handoff(m)]
    assert len(handoffs) == 1 and CONSTRAINT in handoffs[0].text


async def test_without_the_ledger_the_useless_summary_loses_it() -> None:
    """The same run without sections loses the constraint: the summary model really drops it."""
    context, outcomes = await _grow_and_compress(())
    assert outcomes == ["compressed"] * 4
    assert CONSTRAINT not in _text(context)


async def test_a_newer_value_replaces_the_older_one_across_compressions() -> None:
    """The port restated later replaces the early one in the ledger; the constraint stays."""
    context, _ = await _grow_and_compress((FactLedger(),))
    ledger = next(m for m in context if is_handoff(m)).text.split("## Fact ledger\n", 1)[1]
    assert NEW_PORT in ledger
    assert OLD_PORT not in _text(context)
    assert CONSTRAINT in ledger
