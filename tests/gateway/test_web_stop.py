"""/stop mid-stream through the web adapter's real websocket: the draft is left a finished message, marked stopped."""
from __future__ import annotations

from pathlib import Path

from gateway.delivery.outbound import STREAM_CURSOR
from gateway.i18n import say
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import chat, make_config, started, web_port

STOPPED_MARK = say("en", "stream.stopped")

LONG = "word " * 400  # streamed 5 characters every 50 ms: still streaming when /stop arrives


async def test_stop_mid_stream_leaves_the_draft_without_its_cursor(fake_openai: FakeOpenAI, home: Path) -> None:
    """The draft's last edit is what streamed so far, cursor gone, marked stopped (and stored so); /stop answers "stopped."."""
    fake_openai.push(Reply(content=LONG, chunk_chars=5, chunk_delay_seconds=0.05))
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        async with chat(web_port(gateway)) as tab:
            await tab.say("stream a long answer")
            draft = await tab.next_frame("message")
            assert draft["text"].endswith(STREAM_CURSOR)
            await tab.say("/stop")
            finished = await tab.reply_edit(draft["id"])
            while not any(f["type"] == "message" and f["text"].startswith("stopped.") for f in tab.frames):
                await tab.next_frame("message")  # the command's answer, sent before or after the draft's edit
        async with chat(web_port(gateway), tab.chat_id) as reloaded:
            history = await reloaded.next_frame("history")
    shown, mark = finished.rsplit("\n\n", 1)
    assert mark == STOPPED_MARK and shown and LONG.startswith(shown) and len(shown) < len(LONG.rstrip())
    # The session keeps the question and the reply as the user saw it: a reloaded page shows the same.
    assert [(m["role"], m["text"]) for m in history["messages"]] == [("user", "stream a long answer"),
                                                                     ("assistant", finished)]
