"""Common Markdown to MarkdownV2, checked by the fake server's strict MarkdownV2 parser."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.telegram import to_markdown_v2
from adapters.telegram._chunks import utf16_len
from tests.fakes.telegram_api import parse_markdown_v2


def _visible(markdown: str) -> tuple[str, list[tuple[str, str]]]:
    """What Telegram shows: the text and (entity type, covered text) pairs."""
    text, entities = parse_markdown_v2(to_markdown_v2(markdown))
    return text, [(e["type"], text[e["offset"]:e["offset"] + e["length"]]) for e in entities]


@pytest.mark.parametrize(
    ("markdown", "text", "entities"),
    [
        ("plain. with (all) the #specials! 1+1=2 {x} | ~ > -", "plain. with (all) the #specials! 1+1=2 {x} | ~ > -", []),
        ("**bold** and __bold__", "bold and bold", [("bold", "bold"), ("bold", "bold")]),
        ("*italic* and _italic_", "italic and italic", [("italic", "italic"), ("italic", "italic")]),
        ("~~gone~~", "gone", [("strikethrough", "gone")]),
        ("run `ls -la` now", "run ls -la now", [("code", "ls -la")]),
        ("a `back\\slash` b", "a back\\slash b", [("code", "back\\slash")]),
        ("``code with ` tick``", "code with ` tick", [("code", "code with ` tick")]),
        ("[docs](https://ex.org/a_(b)) here", "docs here", [("text_link", "docs")]),
        ("**bold `code` bold**", "bold code bold", [("bold", "bold "), ("code", "code"), ("bold", " bold")]),
        ("# Title\n## C# tips ##", "Title\nC# tips", [("bold", "Title"), ("bold", "C# tips")]),
        ("- one\n* two\n  + three", "• one\n• two\n  • three", []),
        ("snake_case_name stays", "snake_case_name stays", []),
        ("2 * 3 * 4", "2 * 3 * 4", []),
        ("**unclosed bold", "**unclosed bold", []),
        ("[not a link](javascript:alert)", "[not a link](javascript:alert)", []),
        ("\\*escaped\\*", "*escaped*", []),
        ("_italic **bold inside** end_", "italic bold inside end", [("italic", "italic bold inside end"), ("bold", "bold inside")]),
    ],
)
def test_inline_conversion(markdown: str, text: str, entities: list[tuple[str, str]]) -> None:
    """Each construct becomes the intended visible text and entities; everything else is shown as typed."""
    assert _visible(markdown) == (text, entities)


def test_code_block_keeps_language_and_raw_content() -> None:
    """A fenced block becomes a pre entity with its language; its content is not formatted or altered."""
    markdown = "Run:\n```python\nprint('**not bold**', a_b, `x`)\n```\ndone."
    text, entities = parse_markdown_v2(to_markdown_v2(markdown))
    pre = [e for e in entities if e["type"] == "pre"]
    assert (len(pre), pre[0]["language"]) == (1, "python")
    assert text[pre[0]["offset"]:pre[0]["offset"] + pre[0]["length"]].rstrip("\n") == "print('**not bold**', a_b, `x`)"
    assert text.endswith("done.")


def test_unclosed_fence_runs_to_the_end() -> None:
    """An unterminated code block (a reply cut short) is still valid: a pre entity to the end."""
    text, entities = parse_markdown_v2(to_markdown_v2("```\nopen\nblock"))
    assert [e["type"] for e in entities] == ["pre"] and "open\nblock" in text


_PIECES = ["**", "__", "_", "*", "~~", "`", "```", "[", "](https://e.org/", ")", "(", "a", "b", " ", "\n", "\\",
           "🙂", ".", "#", "- ", "> ", "```py\n", "\n```\n"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80) | st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_output_is_always_valid_and_never_longer(markdown: str) -> None:
    """Any input converts to MarkdownV2 that Telegram accepts, with visible text no longer than the input."""
    text, _ = parse_markdown_v2(to_markdown_v2(markdown))
    assert utf16_len(text) <= utf16_len(markdown)
