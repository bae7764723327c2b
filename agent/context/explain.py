"""What one compression did to each message: the data behind `chorus compress --explain`.

Owns `CompressionExplain`, a value naming which original messages were kept
in the head, pinned, summarised or kept in the tail, which were pruned and
how, and how the summary was placed. Knows nothing of how it is printed.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from agent.context.sections import SectionDrops

Fate: TypeAlias = Literal["head", "pinned", "summarised", "tail"]


@dataclass(frozen=True, slots=True)
class MessageFate:
    """One original message: where it went and whether it was pruned (`pruned` is the prune kind)."""

    index: int
    role: str
    fate: Fate
    pruned: str | None = None


@dataclass(frozen=True, slots=True)
class CompressionExplain:
    """Indices refer to the input messages of the compression.

    Attributes:
        head_end: messages before this index were the protected head.
        tail_start: messages from this index on were kept verbatim (unless pruned).
        pinned: middle messages kept verbatim (the latest user message).
        pruned: index -> how a kept message was changed ("duplicate", "one_line", "arguments",
            "pressure", "oversize", or "merged" for the tail message the summary was merged into).
        summary_role: the role of the summary message ("user"/"assistant"), or of the
            message it was merged into.
        merged: the summary was merged into the first tail message.
        sections: titles of the handoff sections that contributed text.
        fact_drops: the ledger lines superseded or dropped over budget (the ledger's declared policy).
    """

    roles: tuple[str, ...]
    head_end: int
    tail_start: int
    pinned: tuple[int, ...] = ()
    pruned: Mapping[int, str] = field(default_factory=dict)
    summary_role: str = ""
    merged: bool = False
    sections: tuple[str, ...] = ()
    dropped_tool_results: int = 0
    stubbed_tool_calls: int = 0
    images_stripped: int = 0
    fact_drops: SectionDrops = field(default_factory=SectionDrops)  # ledger lines given up, by reason

    @property
    def summarised(self) -> tuple[int, ...]:
        pinned = set(self.pinned)
        return tuple(index for index in range(self.head_end, self.tail_start) if index not in pinned)

    def fates(self) -> list[MessageFate]:
        """One entry per input message, in order."""
        pinned = set(self.pinned)
        out: list[MessageFate] = []
        for index, role in enumerate(self.roles):
            fate: Fate
            if index < self.head_end:
                fate = "head"
            elif index >= self.tail_start:
                fate = "tail"
            elif index in pinned:
                fate = "pinned"
            else:
                fate = "summarised"
            out.append(MessageFate(index, role, fate, self.pruned.get(index) if fate != "summarised" else None))
        return out
