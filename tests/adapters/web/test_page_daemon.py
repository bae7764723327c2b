"""The web chat page in headless Chromium against a real `chorus run` and the fake model.

A picture sent with the attach button and seen by the model; /stop, a reload and a restart of the daemon in
the middle of a streaming reply; /undo; a token login. The reply is held before its last chunk by the fake model
(`Reply.hold_last_chunk`) until the test has done what it checks mid-stream. With `CHORUS_SCREENSHOTS=<dir>`
the pictures of the issue's closing note are written there (`webchat-upload.png`, `webchat-desktop.png`,
`webchat-phone.png`).
"""
from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.adapters.web.browser import Page, open_page
from tests.fakes.images import png
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.daemon import start_daemon, stop_daemon, write_daemon_config
from tests.gateway.replicas import web_port

WAIT = 60.0
# A reply that streams for a few seconds (the draft shows after half a second), then waits before its last chunk.
DESCRIBED = ("A **blue** rectangle, 120 by 80 pixels:\n\n- one colour, `#1e5ac8`\n- no text in it\n\n"
             "```python\nfrom PIL import Image\nImage.new('RGB', (120, 80), (30, 90, 200))\n```")
FULL = "The answer streams in slowly, word by word" + ", and on" * 40 + "."
# Each bubble as [who, text, pictures]: "me", "bot" or "notice".
SHOWN = ("[...document.querySelectorAll('#log .msg')].map((d) => [d.classList.contains('me') ? 'me' :"
         " d.classList.contains('bot') ? 'bot' : 'notice', (d.querySelector('.body') || {}).textContent || '',"
         " d.querySelectorAll('img.thumb').length])")
DRAFTING = SHOWN + ".some((b) => b[0] === 'bot' && b[1].endsWith('\\u258c'))"
WAITING = "document.querySelectorAll('#log .msg.me.pending').length"
CONNECTED = "document.getElementById('status').textContent === 'connected'"


@asynccontextmanager
async def _chorus(fake: FakeOpenAI, home: Path, tmp_path: Path, **web: Any) -> AsyncIterator[tuple[Any, int]]:
    """`chorus run` on a free port (`web`: more `platforms.web` keys): (its process, the web chat's port)."""
    config = tmp_path / "config.yaml"
    write_daemon_config(config, home, fake.base_url, **web)
    process, lines = await start_daemon(config)
    try:
        yield process, web_port(lines)
    finally:
        if process.returncode is None:
            await stop_daemon(process)


async def _say(page: Page, text: str) -> None:
    await page.evaluate("document.getElementById('text').focus(); true")
    await page.insert_text(text)
    await page.press_enter()


async def _screenshot(page: Page, name: str) -> None:
    folder = os.environ.get("CHORUS_SCREENSHOTS")
    if folder:
        (Path(folder) / name).write_bytes(await page.screenshot())


def _held(hold: asyncio.Event, text: str = FULL) -> Reply:
    return Reply(content=text, chunk_chars=8, chunk_delay_seconds=0.05, hold_last_chunk=hold)


async def test_a_picture_sent_with_the_attach_button_is_seen_by_the_model(
    fake_openai: FakeOpenAI, home: Path, tmp_path: Path,
) -> None:
    """The picture reaches the model as an image part; the bubble keeps its thumbnail after a reload."""
    picture = png(120, 80, (30, 90, 200))
    (tmp_path / "square.png").write_bytes(picture)
    fake_openai.push(Reply(content=DESCRIBED))
    async with _chorus(fake_openai, home, tmp_path) as (_process, port), \
            open_page(f"http://127.0.0.1:{port}/?chat=pics", tmp_path / "profile") as page:
        await page.until(CONNECTED)
        await page.choose_files("#files", [tmp_path / "square.png"])
        await page.until("!!document.querySelector('#tray img.thumb')")
        await page.resize(1000, 700)
        await page.evaluate("document.getElementById('text').focus(); true")
        await page.insert_text("What is in this picture?")
        await _screenshot(page, "webchat-upload.png")
        await page.press_enter()
        request = await fake_openai.wait_for_request(1, timeout=WAIT)
        await page.until(SHOWN + ".some((b) => b[0] === 'bot')")
        await _screenshot(page, "webchat-desktop.png")
        await page.reload()
        await page.until(CONNECTED)
        after_reload = await page.until(SHOWN + ".length === 2 && " + SHOWN)
    parts = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    assert parts == [{"type": "text", "text": "What is in this picture?"}, {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(picture).decode()}}]
    assert after_reload[0] == ["me", "What is in this picture?", 1]
    assert after_reload[1][0] == "bot" and after_reload[1][1].startswith("A blue rectangle, 120 by 80 pixels:")


async def test_stop_mid_stream_leaves_a_finished_reply_that_a_reload_shows_again(
    fake_openai: FakeOpenAI, home: Path, tmp_path: Path,
) -> None:
    """/stop: the draft loses its cursor and is marked stopped; after a reload the stored session shows the same."""
    hold = asyncio.Event()
    fake_openai.push(_held(hold))
    try:
        async with _chorus(fake_openai, home, tmp_path) as (_process, port), \
                open_page(f"http://127.0.0.1:{port}/?chat=stopper", tmp_path / "profile") as page:
            await page.until(CONNECTED)
            await _say(page, "tell me a long story")
            await page.until(DRAFTING, timeout=WAIT)
            await _say(page, "/stop")
            stopped = await page.until(SHOWN + ".filter((b) => b[0] === 'bot' && b[1].endsWith('(stopped)'))[0]")
            await page.reload()
            await page.until(CONNECTED)
            reloaded = await page.until(SHOWN + ".length === 2 && " + SHOWN)
    finally:
        hold.set()
    partial = stopped[1].removesuffix("(stopped)").strip()
    assert partial and FULL.startswith(partial) and len(partial) < len(FULL)
    assert reloaded == [["me", "tell me a long story", 0], ["bot", stopped[1], 0]]


async def test_a_reload_mid_stream_shows_the_reply_in_progress_once(
    fake_openai: FakeOpenAI, home: Path, tmp_path: Path,
) -> None:
    """Reloaded while the reply streams: the question (still waiting) and one draft, which becomes the reply."""
    hold = asyncio.Event()
    fake_openai.push(_held(hold))
    try:
        async with _chorus(fake_openai, home, tmp_path) as (_process, port), \
                open_page(f"http://127.0.0.1:{port}/?chat=reloader", tmp_path / "profile") as page:
            await page.until(CONNECTED)
            await _say(page, "stream please")
            await page.until(DRAFTING, timeout=WAIT)
            await page.reload()
            await page.until(CONNECTED)
            mid = await page.until(DRAFTING + " && " + SHOWN)
            waiting_mid = await page.evaluate(WAITING)
            hold.set()
            done = await page.until(SHOWN + ".some((b) => b[1] === " + repr(FULL) + ") && " + SHOWN)
            waiting_done = await page.evaluate(WAITING)
    finally:
        hold.set()
    assert [(who, text) for who, text, _ in mid][:1] == [("me", "stream please")]
    assert [who for who, _, _ in mid] == ["me", "bot"]
    assert done == [["me", "stream please", 0], ["bot", FULL, 0]]
    assert (waiting_mid, waiting_done) == (1, 0)  # the question is marked waiting until its reply is finished


async def test_a_restart_mid_stream_leaves_one_reply_and_no_draft(
    fake_openai: FakeOpenAI, home: Path, tmp_path: Path,
) -> None:
    """`chorus run` stopped while the reply streams and started again: the page reconnects by itself and shows
    the question and the replayed reply once, without the first run's partial draft."""
    hold = asyncio.Event()
    fake_openai.push(_held(hold, "never finished" + ", on" * 60), Reply(content="The replayed answer."))
    config = tmp_path / "config.yaml"
    write_daemon_config(config, home, fake_openai.base_url)
    process, lines = await start_daemon(config)
    port = web_port(lines)
    try:
        async with open_page(f"http://127.0.0.1:{port}/?chat=restarter", tmp_path / "profile") as page:
            await page.until(CONNECTED)
            await _say(page, "survive a restart")
            await page.until(DRAFTING, timeout=WAIT)
            await stop_daemon(process)
            await page.until("document.getElementById('status').textContent.startsWith('disconnected')")
            write_daemon_config(config, home, fake_openai.base_url, web_port=port)  # the page reconnects to the same address
            process, _ = await start_daemon(config)
            done = await page.until(SHOWN + ".some((b) => b[1] === 'The replayed answer.') && " + SHOWN,
                                    timeout=WAIT)
            await page.reload()
            await page.until(CONNECTED)
            reloaded = await page.until(SHOWN + ".length === 2 && " + SHOWN)
    finally:
        hold.set()
        if process.returncode is None:
            await stop_daemon(process)
    expected = [["me", "survive a restart", 0], ["bot", "The replayed answer.", 0]]
    assert (done, reloaded) == (expected, expected)


async def test_undo_removes_the_last_exchange_from_the_page(fake_openai: FakeOpenAI, home: Path, tmp_path: Path) -> None:
    """Two exchanges, /undo: the page redraws the stored session (one exchange) and shows the command's answer."""
    async with _chorus(fake_openai, home, tmp_path) as (_process, port), \
            open_page(f"http://127.0.0.1:{port}/?chat=undoer", tmp_path / "profile") as page:
        await page.until(CONNECTED)
        await _say(page, "first")
        await page.until(SHOWN + ".some((b) => b[1] === 'echo: first')")
        await _say(page, "second")
        await page.until(SHOWN + ".some((b) => b[1] === 'echo: second')")
        await page.resize(360, 640)
        await _screenshot(page, "webchat-phone.png")
        await _say(page, "/undo")
        after = await page.until(SHOWN + ".length === 3 && !" + SHOWN + ".some((b) => b[1] === 'echo: second') && "
                                 + SHOWN)
    assert after[:2] == [["me", "first", 0], ["bot", "echo: first", 0]]
    assert after[2][0] == "bot" and "second" not in after[2][1]


async def test_a_token_login_then_the_chat_and_its_transcript_after_a_reload(
    fake_openai: FakeOpenAI, home: Path, tmp_path: Path,
) -> None:
    """`platforms.web.auth: token`: the sign-in form first (a wrong token refused), then the chat; a reload keeps
    the session cookie and shows the stored exchange."""
    submit = "document.getElementById('token').value = {!r}; document.getElementById('signin').requestSubmit(); true"
    async with _chorus(fake_openai, home, tmp_path, auth="token", token="daemon-token") as (_process, port), \
            open_page(f"http://127.0.0.1:{port}/?chat=signed", tmp_path / "profile") as page:
        await page.until("!document.getElementById('signin').hidden")
        await page.evaluate(submit.format("not-the-token"))
        refused = await page.until("document.getElementById('status').textContent === 'wrong token'")
        await page.evaluate(submit.format("daemon-token"))
        await page.until(CONNECTED)
        await _say(page, "hello after sign-in")
        await page.until(SHOWN + ".some((b) => b[1] === 'echo: hello after sign-in')")
        await page.reload()
        await page.until(CONNECTED)
        reloaded = await page.until(SHOWN + ".length === 2 && " + SHOWN)
        form_hidden = await page.evaluate("document.getElementById('signin').hidden")
    assert (refused, form_hidden) == (True, True)
    assert reloaded == [["me", "hello after sign-in", 0], ["bot", "echo: hello after sign-in", 0]]
