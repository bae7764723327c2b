"""Shared builders for the compressor tests: sessions from tests/data, a clock, scripted summarisers."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.context import ContextCompressor, Summarizer, SummaryRequest
from agent.context.engine import CompressionEvent
from agent.messages import Message, ToolCall
from agent.session_files import SessionRecord, read_sessions
from agent.settings import CompressionSettings
from agent.tokens import TokenCounter, estimate_counter
from chorus_errors import ModelError

DATA = Path(__file__).resolve().parents[2] / "data"


def session(name: str, index: int = 0) -> SessionRecord:
    return list(read_sessions(DATA / name))[index]


def minisweagent() -> tuple[Message, ...]:
    return session("minisweagent_django_15957.jsonl").messages


def taubench(index: int = 0) -> tuple[Message, ...]:
    return session("taubench_airline.jsonl", index).messages


def irc() -> tuple[Message, ...]:
    return session("irc_ubuntu_meeting_2.jsonl").messages


class Clock:
    """An injected clock that only moves when told."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class ScriptedSummarizer:
    """Answers with scripted texts or raises scripted errors, recording each request."""

    script: list[str | ModelError] = field(default_factory=list)
    default: str = "## Goal\nFix the bug.\n\n## Critical context\nport 8443"
    requests: list[SummaryRequest] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        item = self.script.pop(0) if self.script else self.default
        if isinstance(item, ModelError):
            raise item
        return item


class Events:
    """An event sink that records what it receives."""

    def __init__(self) -> None:
        self.seen: list[CompressionEvent] = []

    async def __call__(self, event: CompressionEvent) -> None:
        self.seen.append(event)

    @property
    def kinds(self) -> list[str]:
        return [event.kind for event in self.seen]


def make(
    *,
    summarizer: Summarizer | None = None,
    context_length: int = 128_000,
    counter: TokenCounter | None = None,
    clock: Clock | None = None,
    sections: Sequence[object] = (),
    **settings: object,
) -> ContextCompressor:
    return ContextCompressor(
        CompressionSettings(**settings),  # type: ignore[arg-type]
        context_length=context_length,
        model="test-model",
        summarizer=summarizer,
        counter=counter or estimate_counter(),
        now=clock or Clock(),
        sections=sections,  # type: ignore[arg-type]
    )


def call(call_id: str, name: str = "bash", arguments: str = '{"command": "ls"}') -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def chat(turns: int, *, words: int = 200, system: bool = True) -> list[Message]:
    """A plain user/assistant chat of `turns` exchanges, each message about `words` words."""
    out: list[Message] = [Message(role="system", content="You are a helpful assistant.")] if system else []
    for turn in range(turns):
        out.append(Message(role="user", content=f"question {turn}: " + "lorem ipsum " * (words // 2)))
        out.append(Message(role="assistant", content=f"answer {turn}: " + "dolor sit " * (words // 2)))
    return out
