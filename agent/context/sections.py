"""Extra sections appended to a compression handoff: the hook other components plug into.

Owns the `HandoffSection` Protocol and how sections are rendered onto a summary
body. A section sees the original (unpruned) messages being summarised and the
previous handoff text, and returns deterministic text (or None) that the
compressor appends as `## {title}` after the summary body (LLM or fallback)
and before the END marker. Knows nothing of how summaries are produced.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import structlog

from agent.messages import Message
from agent.tokens import TokenCounter

log = structlog.get_logger(__name__)


class HandoffSection(Protocol):
    """A deterministic part of every handoff summary (e.g. the fact ledger).

    Attributes:
        title: the section heading, rendered as `## {title}`.
    """

    title: str

    def build(
        self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter
    ) -> str | None:
        """Return the section text for this compression, or None to add nothing.

        Args:
            dropped: the original (unpruned) messages of the span being
                summarised. On a second compression this includes the previous
                handoff message itself.
            previous_summary: the whole content of the previous handoff
                message (as recovered for an iterative update), or None.
            counter: the token counter, for sections that keep a budget.
        """
        ...


@dataclass(frozen=True, slots=True)
class SectionDrops:
    """What deterministic sections gave up in one compression: one rendered line per dropped fact.

    Attributes:
        superseded: lines replaced by a newer statement on the same subject.
        over_budget: lines dropped to stay within the budget (by the section's declared policy).
    """

    superseded: tuple[str, ...] = ()
    over_budget: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return len(self.superseded) + len(self.over_budget)

    def __add__(self, other: SectionDrops) -> SectionDrops:
        return SectionDrops(self.superseded + other.superseded, self.over_budget + other.over_budget)


@runtime_checkable
class ReportsDrops(Protocol):
    """A section that says which facts it dropped (the fact ledger): never a silent loss."""

    def build_with_drops(
        self, dropped: Sequence[Message], previous_summary: str | None, counter: TokenCounter
    ) -> tuple[str | None, SectionDrops]:
        """`HandoffSection.build` plus what was given up."""
        ...


def section_heading(title: str) -> str:
    """The heading line a section is rendered under."""
    return f"## {title}"


def build_sections(
    sections: Sequence[HandoffSection],
    dropped: Sequence[Message],
    previous_summary: str | None,
    counter: TokenCounter,
) -> list[str]:
    """Each section's rendered block (`## {title}` + text), in order; empty sections are left out."""
    return build_sections_reported(sections, dropped, previous_summary, counter)[0]


def build_sections_reported(
    sections: Sequence[HandoffSection],
    dropped: Sequence[Message],
    previous_summary: str | None,
    counter: TokenCounter,
) -> tuple[list[str], SectionDrops]:
    """The rendered blocks and what the sections dropped.

    Independent of the summary body, so it can run while the summary model
    works. A section that raises is skipped (and logged): a broken plugin must
    never cost the user their compression.
    """
    blocks: list[str] = []
    drops = SectionDrops()
    for section in sections:
        try:
            if isinstance(section, ReportsDrops):
                text, dropped_here = section.build_with_drops(dropped, previous_summary, counter)
                drops = drops + dropped_here
            else:
                text = section.build(dropped, previous_summary, counter)
        except Exception as exc:  # noqa: BLE001 - a plugin boundary
            log.warning("compression.section_failed", section=section.title, error=type(exc).__name__)
            continue
        if text and text.strip():
            blocks.append(f"{section_heading(section.title)}\n{text.strip()}")
    return blocks, drops


def join_sections(body: str, blocks: Sequence[str]) -> str:
    """`body` followed by the section blocks, each after a blank line."""
    return "\n\n".join([body.rstrip(), *blocks])


def render_sections(
    body: str,
    sections: Sequence[HandoffSection],
    dropped: Sequence[Message],
    previous_summary: str | None,
    counter: TokenCounter,
) -> str:
    """Append each section's text to `body` as `\\n\\n## {title}\\n{text}`."""
    return join_sections(body, build_sections(sections, dropped, previous_summary, counter))
