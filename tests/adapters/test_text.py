"""Splitting long replies."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters.text import split_text


def test_short_text_is_one_chunk() -> None:
    """A text under the limit is sent as is."""
    assert split_text("hello", 100) == ["hello"]


def test_code_block_is_closed_and_reopened() -> None:
    """A fenced block cut by the limit is closed in one chunk and reopened with its language."""
    text = "intro\n```python\n" + "\n".join(f"x = {i}" for i in range(200)) + "\n```\nafter"
    chunks = split_text(text, 300)
    assert all(len(chunk) <= 300 for chunk in chunks)
    assert all(chunk.count("```") % 2 == 0 for chunk in chunks)
    assert chunks[1].startswith("```python\n")


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=16, max_value=500))
def test_chunks_respect_the_limit_and_keep_every_character(text: str, limit: int) -> None:
    """No chunk exceeds the limit; without fences the chunks join back to the text."""
    text = text.replace("`", "")
    chunks = split_text(text, limit)
    assert all(len(chunk) <= limit for chunk in chunks)
    assert "".join(chunks) == text
