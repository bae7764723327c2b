"""Reasoning blocks are removed from finished texts and from streams split anywhere."""
from __future__ import annotations

import pytest

from agent.reasoning import ReasoningFilter, strip_reasoning

CASES = [
    ("<think>\nthe user wants the time\n</think>\n\nIt is 5pm.", "It is 5pm."),
    ("It is <thinking>hmm</thinking>5pm.", "It is 5pm."),
    ("the template opened the block\n</think>\nIt is 5pm.", "It is 5pm."),
    ("It is 5pm.<think>and then I ran out of tok", "It is 5pm."),
    ("<THINK>upper</THINK>ok", "ok"),
    ("a < b and c > d, no tags", "a < b and c > d, no tags"),
]


@pytest.mark.parametrize(("raw", "visible"), CASES)
def test_strip_reasoning(raw: str, visible: str) -> None:
    """Blocks, a template-opened block and a cut-off block are removed; other text is untouched."""
    assert strip_reasoning(raw) == visible


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize(("raw", "visible"), [case for case in CASES if not case[0].startswith("the template")])
def test_stream_split_anywhere_shows_only_the_answer(raw: str, visible: str, size: int) -> None:
    """Deltas of any size: tags split across deltas are held back, nothing inside a block is shown."""
    stream = ReasoningFilter()
    shown = [stream.feed(raw[i:i + size]) for i in range(0, len(raw), size)]
    assert "".join(shown) + stream.flush() == visible
