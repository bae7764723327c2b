"""Markdown → mrkdwn and Slack text → plain text: table tests on what models and Slack really produce."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.slack import from_slack, to_mrkdwn
from adapters.slack._mrkdwn import split_mrkdwn


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("**bold** and __also__", "*bold* and *also*"),
        ("*it* and _it_", "_it_ and _it_"),
        ("~~gone~~", "~gone~"),
        ("[the docs](https://example.com/a?b=1&c=2)", "<https://example.com/a?b=1&amp;c=2|the docs>"),
        ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
        ("## Steps\n- one\n* two", "*Steps*\n• one\n• two"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("use `x**2 < y` here", "use `x**2 &lt; y` here"),
        ("```python\nif a < b and **c**:\n    pass\n```", "```\nif a &lt; b and **c**:\n    pass\n```"),
        ("plain text", "plain text"),
    ],
)
def test_to_mrkdwn(markdown: str, expected: str) -> None:
    """Each Markdown construct maps to its mrkdwn form; code stays verbatim but escaped."""
    assert to_mrkdwn(markdown) == expected


@pytest.mark.parametrize(
    ("slack", "expected"),
    [
        ("<@UBOT> hello", "hello"),
        ("<@UBOT|chorus> hello <@U2>", "hello @U2"),
        ("ask <@U2|bob> in <#C1|general>", "ask @bob in #general"),
        ("see <https://a.io|A> and <https://b.io>", "see A (https://a.io) and https://b.io"),
        ("1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"),
        ("<!here> deploy?", "@here deploy?"),
    ],
)
def test_from_slack(slack: str, expected: str) -> None:
    """Inbound Slack markup becomes readable plain text with the bot's mention removed."""
    assert from_slack(slack, bot_user_id="UBOT") == expected


def test_split_mrkdwn_keeps_every_chunk_under_the_limit_after_escaping() -> None:
    """Escaping grows `&` fivefold; chunks are re-split so none exceeds the limit after conversion."""
    text = "\n".join("a & b < c > d & e & f & g" for _ in range(200))
    chunks = split_mrkdwn(text, 500)
    assert all(len(chunk) <= 500 for chunk in chunks)
    assert "".join(chunks).count("&amp;") == text.count("&")


@given(st.text(alphabet="ab &<>*_\n", max_size=2000), st.integers(min_value=64, max_value=400))
def test_split_mrkdwn_never_exceeds_the_limit(text: str, limit: int) -> None:
    """Whatever the input, every converted chunk fits the limit."""
    assert all(len(chunk) <= limit for chunk in split_mrkdwn(text, limit))
