"""The web chat page in headless Chromium: one bubble per reply across a reload and a restart; the banner follows the server."""
from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.base import ChatTarget, InboundMessage
from adapters.web import WebAdapter
from gateway.delivery.outbound import STREAM_CURSOR
from tests.adapters.web.browser import open_page

CHAT = "tab1"
TARGET = ChatTarget("web", CHAT)
WAIT = 30.0


async def _started(port: int = 0, banner: str = "") -> WebAdapter:
    adapter = WebAdapter(host="127.0.0.1", port=port, banner=banner)
    await adapter.start(asyncio.Queue[InboundMessage]())
    return adapter


async def _connected(adapter: WebAdapter) -> None:
    async def wait() -> None:
        while not adapter.connected(CHAT):
            await asyncio.sleep(0.02)  # polling for the browser's websocket, not a synchronisation guess
    await asyncio.wait_for(wait(), WAIT)


def test_the_adapter_knows_the_gateways_stream_cursor() -> None:
    """The adapter (drafts sent again to a page that connects) and the page (a finished reply answers a waiting
    question) tell drafts by the gateway's cursor."""
    from adapters.web import STREAM_CURSOR as ADAPTER_CURSOR

    page = (Path(__file__).resolve().parents[3] / "adapters" / "web" / "chat.js").read_text(encoding="utf-8")
    assert ADAPTER_CURSOR == STREAM_CURSOR == " \u258c" and 'text.endsWith(" \\u258c")' in page


BUBBLES = "[...document.querySelectorAll('.msg')].map((d) => d.className + '|' + d.textContent)"


async def test_a_reload_after_a_restart_mid_reply_shows_one_bubble_per_reply(tmp_path: Path) -> None:
    """A draft left streaming, the tab reloaded on a restarted gateway that sends the full reply: one bubble."""
    first = await _started()
    port = first.port
    async with open_page(f"http://127.0.0.1:{port}/?chat={CHAT}", tmp_path / "profile") as page:
        await _connected(first)
        await first.send(TARGET, "the answer is" + STREAM_CURSOR)
        before = await page.until(BUBBLES)
        await first.stop()
        second = await _started(port)  # the restarted gateway: new message ids
        try:
            await page.reload()
            await _connected(second)
            await second.send(TARGET, "the answer is 42")
            await page.until(BUBBLES + ".some((b) => b.endsWith('42'))")
            after = await page.evaluate(BUBBLES)
        finally:
            await second.stop()
    assert before == ["msg bot|the answer is" + STREAM_CURSOR]
    assert after == ["msg bot|the answer is 42"]


async def test_an_edit_after_a_reload_updates_the_same_bubble(tmp_path: Path) -> None:
    """Reloaded mid-reply on the same gateway: the final edit replaces the draft instead of adding a bubble."""
    adapter = await _started()
    try:
        async with open_page(f"http://127.0.0.1:{adapter.port}/?chat={CHAT}", tmp_path / "profile") as page:
            await _connected(adapter)
            [sent] = await adapter.send(TARGET, "done: first part")
            await page.until(BUBBLES + ".length === 1")
            await page.reload()
            await page.until("document.getElementById('status').textContent === 'connected'")
            await adapter.edit(sent, "done: first part and the rest")
            await page.until(BUBBLES + ".some((b) => b.endsWith('the rest'))")
            bubbles = await page.evaluate(BUBBLES)
    finally:
        await adapter.stop()
    assert bubbles == ["msg bot|done: first part and the rest"]


async def test_the_banner_is_cleared_when_the_restarted_server_sends_none(tmp_path: Path) -> None:
    """Connected with a "no model" banner; the server restarts configured: after the reconnect the banner is gone."""
    first = await _started(banner="No model is configured yet.")
    port = first.port
    async with open_page(f"http://127.0.0.1:{port}/?chat={CHAT}", tmp_path / "profile") as page:
        shown = await page.until("document.getElementById('banner').style.display === 'block' && "
                                 "document.getElementById('banner').textContent")
        await first.stop()
        second = await _started(port)
        try:
            await _connected(second)  # the page reconnected by itself
            hidden = await page.until("document.getElementById('banner').style.display === 'none'")
        finally:
            await second.stop()
    assert (shown, hidden) == ("No model is configured yet.", True)


async def test_a_token_protected_chat_shows_the_sign_in_form_first(tmp_path: Path) -> None:
    """With a token required the page asks for it, refuses a wrong one, and chats once signed in."""
    from adapters.web import WebAccess

    adapter = WebAdapter(host="127.0.0.1", port=0, access=WebAccess("page-token"))
    await adapter.start(asyncio.Queue[InboundMessage]())
    try:
        async with open_page(f"http://127.0.0.1:{adapter.port}/?chat={CHAT}", tmp_path / "profile") as page:
            await page.until("!document.getElementById('signin').hidden")
            assert adapter.connected(CHAT) == 0
            submit = ("document.getElementById('token').value = {!r}; "
                      "document.getElementById('signin').requestSubmit(); true")
            await page.evaluate(submit.format("wrong"))
            await page.until("document.getElementById('status').textContent === 'wrong token'")
            assert adapter.connected(CHAT) == 0
            await page.evaluate(submit.format("page-token"))
            await _connected(adapter)
            await adapter.send(TARGET, "welcome back")
            await page.until(BUBBLES + ".some((b) => b.endsWith('welcome back'))")
            stored = await page.evaluate("JSON.stringify(localStorage) + JSON.stringify(sessionStorage)")
    finally:
        await adapter.stop()
    assert "page-token" not in stored  # the token is not kept by the page (the session is an HttpOnly cookie)


async def test_a_message_typed_while_disconnected_is_sent_after_the_redraw_and_keeps_its_bubble(tmp_path: Path) -> None:
    """Typed while the server is down: on reconnect the stored transcript is drawn, then the message is sent
    and its bubble shown after it (a redraw does not drop it)."""
    from adapters.web import TranscriptLine

    async def stored(_chat_id: str) -> list[TranscriptLine]:
        return [TranscriptLine("user", "earlier"), TranscriptLine("assistant", "stored answer")]

    first = await _started()
    port = first.port
    async with open_page(f"http://127.0.0.1:{port}/?chat={CHAT}", tmp_path / "profile") as page:
        await _connected(first)
        await first.stop()
        await page.until("document.getElementById('status').textContent.startsWith('disconnected')")
        await page.evaluate("document.getElementById('text').focus(); true")
        await page.insert_text("typed offline")
        await page.press_enter()
        inbound = asyncio.Queue[InboundMessage]()
        second = WebAdapter(host="127.0.0.1", port=port)
        second.transcript = stored
        await second.start(inbound)
        try:
            message = await asyncio.wait_for(inbound.get(), WAIT * 2)
            shown = await page.until(BUBBLES + ".length === 3 && " + BUBBLES)
        finally:
            await second.stop()
    assert message.text == "typed offline"
    assert shown == ["msg me|earlier", "msg bot|stored answer", "msg me|typed offline"]
