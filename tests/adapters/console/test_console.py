"""The console adapter: lines in, replies out."""
from __future__ import annotations

import asyncio
import io

from adapters.base import ChatTarget, InboundMessage
from adapters.console import ConsoleAdapter


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
