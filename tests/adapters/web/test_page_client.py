"""The web chat page as a client, in headless Chromium: multi-line input, the chat id, Markdown rendered safely, a phone."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from adapters.base import ChatTarget, InboundMessage
from adapters.web import WebAdapter
from tests.adapters.web.browser import Page, open_page

CHAT = "tab1"
TARGET = ChatTarget("web", CHAT)
WAIT = 30.0
# Copies land in window.copied: the page's clipboard writes, observed without a clipboard permission.
STUB_CLIPBOARD = "navigator.clipboard.writeText = async (text) => { window.copied = text; }; true"


@asynccontextmanager
async def _chatting(profile: Path) -> AsyncIterator[tuple[WebAdapter, asyncio.Queue[InboundMessage], Page]]:
    inbound = asyncio.Queue[InboundMessage]()
    adapter = WebAdapter(host="127.0.0.1", port=0)
    await adapter.start(inbound)
    try:
        async with open_page(f"http://127.0.0.1:{adapter.port}/?chat={CHAT}", profile) as page:
            await page.until("document.getElementById('status').textContent === 'connected'")
            yield adapter, inbound, page
    finally:
        await adapter.stop()


async def test_a_pasted_multi_line_message_reaches_the_adapter_with_its_newlines(tmp_path: Path) -> None:
    """Pasted lines, a Shift+Enter newline, then Enter sends: the newlines arrive; the input is empty and focused."""
    async with _chatting(tmp_path / "profile") as (_adapter, inbound, page):
        await page.evaluate("document.getElementById('text').focus(); true")
        await page.insert_text("def f():\n    return 1")
        await page.press_enter(shift=True)
        await page.insert_text("- a list item")
        before_send = await page.evaluate("document.getElementById('text').value")
        await page.press_enter()
        message = await asyncio.wait_for(inbound.get(), WAIT)
        shown = await page.until("[...document.querySelectorAll('.msg.me')].map((d) => d.textContent)[0]")
        state = await page.evaluate("[document.getElementById('text').value, document.activeElement.id]")
    expected = "def f():\n    return 1\n- a list item"
    assert (before_send, message.text, shown, state) == (expected, expected, expected, ["", "text"])


async def test_the_page_sends_the_browsers_language(tmp_path: Path) -> None:
    """The browser's `navigator.language` rides on each message, so the gateway's own texts can follow it."""
    async with _chatting(tmp_path / "profile") as (_adapter, inbound, page):
        browser_language = await page.evaluate("navigator.language")
        await page.evaluate("document.getElementById('text').focus(); true")
        await page.insert_text("hallo")
        await page.press_enter()
        message = await asyncio.wait_for(inbound.get(), WAIT)
    assert browser_language and message.language == browser_language


async def test_the_chat_id_is_shown_with_a_copy_button(tmp_path: Path) -> None:
    """The id the CLI and `chats."web:ID"` settings use is on the page; its button copies it."""
    async with _chatting(tmp_path / "profile") as (_adapter, _inbound, page):
        await page.evaluate(STUB_CLIPBOARD)
        shown = await page.evaluate("document.getElementById('chatid').textContent")
        await page.evaluate("document.getElementById('copyid').click(); true")
        copied = await page.until("window.copied")
        label = await page.evaluate("document.getElementById('copyid').getAttribute('aria-label')")
    assert (shown, copied, label) == ("web:tab1", "web:tab1", "Copy the chat id")


HOSTILE = ("**bold** and `code`\n\n<img src=x onerror=\"window.pwned = 1\">\n\n<script>window.pwned = 2</script>\n\n"
           "[link](javascript:window.pwned=3)\n\n```python\nprint('<b>hi</b>')\n```")


async def test_a_markdown_reply_renders_and_its_html_stays_inert(tmp_path: Path) -> None:
    """Bold and a code block (with a copy button) render; the model's <img onerror>, <script> and javascript: do nothing."""
    async with _chatting(tmp_path / "profile") as (adapter, _inbound, page):
        await page.evaluate(STUB_CLIPBOARD)
        await adapter.send(TARGET, HOSTILE)
        await page.until("!!document.querySelector('.msg.bot pre')")
        found = await page.evaluate(
            "(() => { const b = document.querySelector('.msg.bot'); return {"
            " strong: [...b.querySelectorAll('strong')].map((e) => e.textContent),"
            " code: b.querySelector('pre > code').textContent,"
            " tags: [...b.querySelectorAll('img, script, iframe, [onerror]')].length,"
            " hrefs: [...b.querySelectorAll('a')].map((a) => a.getAttribute('href')),"
            " text: b.textContent, pwned: window.pwned === undefined ? null : window.pwned }; })()")
        await page.evaluate("document.querySelector('.msg.bot pre button.copy').click(); true")
        copied = await page.until("window.copied")
    assert found["strong"] == ["bold"] and found["code"] == "print('<b>hi</b>')\n"
    assert (found["tags"], found["pwned"]) == (0, None)
    assert all(not (href or "").startswith("javascript:") for href in found["hrefs"])
    assert '<img src=x onerror="window.pwned = 1">' in found["text"]  # shown as text, not parsed
    assert copied == "print('<b>hi</b>')\n"


async def test_the_page_fits_a_phone_360_pixels_wide(tmp_path: Path) -> None:
    """At 360 px nothing scrolls sideways, the input and its Send button are on screen, the transcript is a live region."""
    async with _chatting(tmp_path / "profile") as (adapter, _inbound, page):
        await page.resize(360, 640)
        await adapter.send(TARGET, "a long line " * 30 + "\n\n```\n" + "x" * 200 + "\n```")
        await page.until("!!document.querySelector('.msg.bot pre')")
        layout = await page.evaluate(
            "(() => { const send = document.querySelector('#form button').getBoundingClientRect(); return {"
            " wide: document.documentElement.scrollWidth, send: send.right <= 360 && send.bottom <= 640,"
            " live: document.getElementById('log').getAttribute('aria-live'),"
            " label: document.querySelector('label[for=text]').textContent.length > 0,"
            " viewport: document.querySelector('meta[name=viewport]').content }; })()")
        png = await page.screenshot()
    assert layout == {"wide": 360, "send": True, "live": "polite", "label": True,
                      "viewport": "width=device-width, initial-scale=1"}
    assert png.startswith(b"\x89PNG")


async def test_only_the_vendored_scripts_are_served_and_without_a_sign_in() -> None:
    """The page's two scripts load before sign-in (they hold no chat data); no other file under /vendor/."""
    import aiohttp

    from adapters.web import WebAccess

    adapter = WebAdapter(host="127.0.0.1", port=0, access=WebAccess("page-token"))
    await adapter.start(asyncio.Queue[InboundMessage]())
    base = f"http://127.0.0.1:{adapter.port}/vendor/"
    try:
        async with aiohttp.ClientSession() as http:
            answers = []
            for name in ("marked.umd.js", "purify.min.js", "LICENSE.marked", "../adapter.py"):
                async with http.get(base + name) as response:
                    answers.append((response.status, response.content_type, (await response.text())[:40]))
    finally:
        await adapter.stop()
    assert [a[:2] for a in answers] == [(200, "text/javascript"), (200, "text/javascript"), (404, "text/plain"),
                                        (404, "text/plain")]
    assert "marked" in answers[0][2] and "DOMPurify" in answers[1][2]


def _file_js(name: str, data: bytes, mime: str) -> str:
    """A JavaScript File holding `data`, as the browser makes one from a disk file or the clipboard."""
    import base64

    return (f"new File([Uint8Array.from(atob('{base64.b64encode(data).decode()}'), (c) => c.charCodeAt(0))], "
            f"{name!r}, {{ type: {mime!r} }})")


DROP = ("(() => {{ const dt = new DataTransfer(); dt.items.add({file}); document.body.dispatchEvent("
        "new DragEvent('drop', {{ dataTransfer: dt, bubbles: true, cancelable: true }})); return true; }})()")
PASTE = ("(() => {{ const dt = new DataTransfer(); dt.items.add({file}); document.getElementById('text').dispatchEvent("
         "new ClipboardEvent('paste', {{ clipboardData: dt, bubbles: true, cancelable: true }})); return true; }})()")


async def test_a_dropped_and_a_pasted_picture_go_with_the_next_message(tmp_path: Path) -> None:
    """Both upload at once and wait as thumbnails; Enter sends them with the text, and the adapter holds the bytes."""
    from tests.fakes.images import png

    dropped, pasted = png(4, 4, (200, 0, 0)), png(6, 3, (0, 200, 0))
    async with _chatting(tmp_path / "profile") as (adapter, inbound, page):
        await page.evaluate(DROP.format(file=_file_js("dropped.png", dropped, "image/png")))
        await page.evaluate(PASTE.format(file=_file_js("image.png", pasted, "image/png")))
        await page.until("document.querySelectorAll('#tray img.thumb').length === 2")
        await page.evaluate("document.getElementById('text').focus(); true")
        await page.insert_text("two pictures")
        await page.press_enter()
        message = await asyncio.wait_for(inbound.get(), WAIT)
        shown = await page.until("document.querySelectorAll('.msg.me img.thumb').length")
        tray_hidden = await page.evaluate("document.getElementById('tray').hidden")
        fetched = [await adapter.fetch_attachment(a, max_bytes=10_000) for a in message.attachments]
    assert message.text == "two pictures"
    assert [(a.kind, a.name, a.mime_type) for a in message.attachments] == [
        ("image", "dropped.png", "image/png"), ("image", "image.png", "image/png")]
    assert (fetched, shown, tray_hidden) == ([dropped, pasted], 2, True)


async def test_a_file_over_the_limit_is_refused_on_the_page_with_one_line(tmp_path: Path) -> None:
    """The limit comes from the server's hello; a larger file is not uploaded and the user gets one short line."""
    adapter = WebAdapter(host="127.0.0.1", port=0, max_upload_bytes=1024)
    await adapter.start(asyncio.Queue[InboundMessage]())
    try:
        async with open_page(f"http://127.0.0.1:{adapter.port}/?chat={CHAT}", tmp_path / "profile") as page:
            await page.until("document.getElementById('status').textContent === 'connected'")
            await page.evaluate(DROP.format(file=_file_js("big.bin", b"z" * 2000, "application/octet-stream")))
            notice = await page.until("(document.querySelector('.msg.notice') || {}).textContent")
            tray_hidden = await page.evaluate("document.getElementById('tray').hidden")
    finally:
        await adapter.stop()
    assert (notice, tray_hidden) == ("That file is too large (the limit is 1 KB).", True)
