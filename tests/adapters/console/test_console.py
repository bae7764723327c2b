"""The console adapter: lines in, replies out."""
from __future__ import annotations

import asyncio
import io

import pytest

from adapters.base import ChatTarget, InboundMessage
from adapters.console import ConsoleAdapter
from adapters.console.adapter import _terminal_language


async def test_lines_become_messages_and_replies_are_printed() -> None:
    """Each non-empty line is one DM in the chat `console`; sends print `chorus> text`."""
    reader = asyncio.StreamReader()
    output = io.StringIO()
    console = ConsoleAdapter(reader=reader, output=output)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await console.start(queue)
    reader.feed_data(b"hello\n\nsecond line\n")
    first = await asyncio.wait_for(queue.get(), 5)
    second = await asyncio.wait_for(queue.get(), 5)
    await console.send(ChatTarget("console", "console"), "hi back")
    reader.feed_eof()
    await console.stop()
    assert [(m.text, m.chat_id, m.chat_type) for m in (first, second)] == [
        ("hello", "console", "dm"), ("second line", "console", "dm")
    ]
    assert first.dedup_key != second.dedup_key
    assert output.getvalue().splitlines()[-1] == "chorus> hi back"


async def test_nul_and_invalid_utf8_on_stdin_arrive_as_valid_text() -> None:
    """A line with NUL and bytes that are not UTF-8 becomes valid text (NUL dropped, bad bytes U+FFFD)."""
    reader = asyncio.StreamReader()
    console = ConsoleAdapter(reader=reader, output=io.StringIO())
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await console.start(queue)
    reader.feed_data(b"a\x00b \xed\xa0\xbd c\n")  # \xed\xa0\xbd: a surrogate encoded as if it were UTF-8
    got = await asyncio.wait_for(queue.get(), 5)
    reader.feed_eof()
    await console.stop()
    assert got.text == "ab \ufffd\ufffd\ufffd c"


@pytest.mark.parametrize(("environment", "language"), [
    ({"LANG": "de_DE.UTF-8"}, "de_DE"), ({"LC_ALL": "ja_JP.UTF-8", "LANG": "de_DE.UTF-8"}, "ja_JP"),
    ({"LANG": "C.UTF-8"}, None), ({}, None),
])
def test_the_console_reports_the_terminals_language(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], language: str | None
) -> None:
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert _terminal_language() == language
