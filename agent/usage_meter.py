"""Where the tokens of every model call are reported: one context variable the caller sets.

Owns `ModelUsage`, the `usage_sink` context variable and `report`. The model
client and the transcriber call `report` after every successful call; whoever
set the sink (the gateway's spend limits, for the chat a turn runs in) counts
it. Tasks started inside a turn (background review, memory syncs) inherit the
sink, so their calls count toward the same chat. Without a sink, nothing
happens. A provider that reports no `usage` is estimated from the request and
the reply (`estimated=True`). Knows no chats, platforms or prices.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

from agent.messages import Message, ToolSchema
from agent.tokens import default_counter


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """The tokens of one model call."""

    model: str
    input_tokens: int
    output_tokens: int
    estimated: bool  # the provider sent no usage: counted locally
    kind: Literal["chat", "transcription"] = "chat"

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


UsageSink = Callable[[ModelUsage], Awaitable[None]]
usage_sink: ContextVar[UsageSink | None] = ContextVar("usage_sink", default=None)


async def report_completion(
    model: str, messages: Sequence[Message], tools: Sequence[ToolSchema], reply: Message,
    prompt_tokens: int | None, completion_tokens: int | None,
) -> None:
    """Tell the current sink what a chat completion cost (estimated where the provider said nothing)."""
    sink = usage_sink.get()
    if sink is None:
        return
    estimated = prompt_tokens is None or completion_tokens is None
    counter = default_counter() if estimated else None
    if prompt_tokens is None and counter is not None:
        prompt_tokens = counter.count_request(messages, tools)
    if completion_tokens is None and counter is not None:
        completion_tokens = counter.count_message(reply)
    await sink(ModelUsage(model, prompt_tokens or 0, completion_tokens or 0, estimated))


async def report_transcription(model: str, text: str) -> None:
    """Tell the current sink about a transcription: the transcript's tokens, estimated (audio has no text usage)."""
    sink = usage_sink.get()
    if sink is None:
        return
    await sink(ModelUsage(model, 0, default_counter().count_text(text), True, kind="transcription"))


__all__ = ["ModelUsage", "UsageSink", "report_completion", "report_transcription", "usage_sink"]
