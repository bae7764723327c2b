"""Code in any fence reaches every platform verbatim (issue 30, item 7).

Property tests over documents mixing prose (tables, underscores, CJK, headings, bullets) with fenced blocks of
three to five backticks or tildes whose bodies hold shorter fences, `# Title` lines, tables and the characters
each dialect reserves. Each converter's output is read back by the platform's own rule: Telegram's MarkdownV2
through the strict parser of the fake Bot API (the `pre` entities' text must be each body), Slack's and
Discord's by their rule that a code block runs from ``` to the next ``` (each block's text, zero-width spaces
taken out and Slack's escapes undone, must be each body).
"""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.discord._markdown import to_discord
from adapters.fences import ZERO_WIDTH_SPACE, Fence, blocks, closes, opening
from adapters.slack._mrkdwn import to_mrkdwn
from adapters.telegram._markdown import to_markdown_v2
from adapters.text import split_text
from tests.fakes.telegram_api import parse_markdown_v2

PROSE_LINES = st.sampled_from([
    "| name | value |", "|------|-------|", "| snake_case | 中文 |", "# Title", "## 設定 notes", "- item_one",
    "* star item", "plain words with under_scores and __dunder__", "**bold** and _italic_ text", "日本語のテキスト",
    "a line with (parens) and [brackets] and a.dot!", "",
])
CODE_LINES = st.sampled_from([
    "# Title", "```python", "```", "~~~", "def f(x_y):", "    return x_y * 2  # 注释", "| a | b |", "|---|---|",
    "back\\slash and `tick`", "_under_ *star* ~tilde~", "<tag> & amp", "漢字 and ``double``", "", "    ```",
])


@st.composite
def fenced(draw: st.DrawFn) -> tuple[Fence, str]:
    """An opening fence and a body none of whose lines closes it."""
    char = draw(st.sampled_from("`~"))
    length = draw(st.integers(3, 5))
    info = draw(st.sampled_from(["", "python", "json", "c++"]))
    fence = opening(char * length + info)
    assert fence is not None
    lines = [line for line in draw(st.lists(CODE_LINES, min_size=1, max_size=6)) if not closes(fence, line)]
    return fence, "\n".join(lines)


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A Markdown document and the bodies of its code blocks, in order."""
    parts: list[str] = []
    bodies: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            parts.append("\n".join(draw(st.lists(PROSE_LINES, min_size=1, max_size=4))))
        else:
            fence, body = draw(fenced())
            parts.append(f"{fence.line}\n{body}\n{fence.closing}")
            bodies.append(body)
    return "\n".join(parts), bodies


def _utf16_slice(text: str, offset: int, length: int) -> str:
    encoded = text.encode("utf-16-le")
    return encoded[offset * 2:(offset + length) * 2].decode("utf-16-le")


def telegram_code(markdown_v2: str) -> list[str]:
    """The text of every `pre` entity, as Telegram parses the message."""
    visible, entities = parse_markdown_v2(markdown_v2)
    return [_utf16_slice(visible, e["offset"], e["length"]) for e in entities if e["type"] == "pre"]


_THREE_TICKS = re.compile(r"```(.*?)```", re.DOTALL)


def three_tick_blocks(text: str) -> list[str]:
    """Blocks as Slack and Discord read them: from ``` to the next ```."""
    return [match.group(1) for match in _THREE_TICKS.finditer(text)]


@settings(max_examples=300, deadline=None)
@given(documents())
def test_blocks_find_each_fenced_body(document: tuple[str, list[str]]) -> None:
    text, bodies = document
    assert [b.text for b in blocks(text) if b.fence is not None] == bodies


@settings(max_examples=300, deadline=None)
@given(documents())
def test_telegram_pre_entities_hold_each_body_verbatim(document: tuple[str, list[str]]) -> None:
    text, bodies = document
    assert telegram_code(to_markdown_v2(text)) == [body + "\n" for body in bodies]


@settings(max_examples=300, deadline=None)
@given(documents())
def test_slack_code_blocks_hold_each_body_verbatim(document: tuple[str, list[str]]) -> None:
    text, bodies = document
    found = three_tick_blocks(to_mrkdwn(text))
    unescaped = [b.replace(ZERO_WIDTH_SPACE, "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
                 for b in found]
    assert unescaped == [f"\n{body}\n" for body in bodies]


@settings(max_examples=300, deadline=None)
@given(documents())
def test_discord_code_blocks_hold_each_body_verbatim(document: tuple[str, list[str]]) -> None:
    text, bodies = document
    found = three_tick_blocks(to_discord(text))
    shown = [block.replace(ZERO_WIDTH_SPACE, "").partition("\n")[2].removesuffix("\n") for block in found]
    assert shown == bodies


@settings(max_examples=200, deadline=None)
@given(documents(), st.integers(40, 120))
def test_split_chunks_keep_fences_balanced_and_code_whole(document: tuple[str, list[str]], limit: int) -> None:
    """Cut at any limit, every chunk closes what it opens, and the code all comes through in order (a line cut in
    two is two lines)."""
    text, bodies = document
    chunks = split_text(text, limit)
    code_lines: list[str] = []
    for chunk in chunks:
        assert len(chunk) <= limit
        parts = blocks(chunk)
        assert all(part.closed for part in parts)
        code_lines.extend(line for part in parts if part.fence is not None for line in part.text.split("\n"))
    expected = [line for body in bodies for line in body.split("\n")]
    assert "".join(code_lines) == "".join(expected)


def test_a_four_backtick_fence_around_an_example_stays_one_block_on_telegram() -> None:
    """The issue's case: `# Title` inside stays a line of code, the inner fence lines stay."""
    text = "Here is how:\n````markdown\n# Title\n```python\nprint('hi')\n```\n````\nDone."
    rendered = to_markdown_v2(text)
    assert telegram_code(rendered) == ["# Title\n```python\nprint('hi')\n```\n"]
    visible, entities = parse_markdown_v2(rendered)
    assert not any(e["type"] == "bold" for e in entities)  # no heading was made of "# Title"
    assert visible.startswith("Here is how:\n") and visible.endswith("Done.")
