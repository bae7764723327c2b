"""Pictures and files sent in the web chat: one upload route, then the same attachment path as every platform."""
from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.web._uploads import CHAT_BUDGET_FILES, KEEP_SECONDS, PRUNE_EVERY_SECONDS, UploadsFull, UploadStore
from tests.fakes.images import png
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.harness import chat, make_config, started, web_port


async def upload(port: int, chat_id: str, name: str, body: bytes, mime: str,
                 headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """POST /upload as the page does: the raw bytes, the file's type; the status and the JSON answer."""
    async with aiohttp.ClientSession() as http, http.post(
        f"http://127.0.0.1:{port}/upload", params={"chat": chat_id, "name": name}, data=body,
        headers={"Content-Type": mime, **(headers or {})},
    ) as response:
        answer: dict[str, Any] = await response.json(content_type=None)
        return response.status, answer


def _user_parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


async def test_a_picture_sent_in_the_web_chat_reaches_the_model_as_an_image(fake_openai: FakeOpenAI, home: Path) -> None:
    """Uploaded, named in the message frame: the model gets the PNG byte for byte; a reconnect shows it again."""
    picture = png(3, 2, (0, 128, 255))
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        port = web_port(gateway)
        async with chat(port, "pics") as tab:
            status, uploaded = await upload(port, "pics", "../../dot.png", picture, "image/png")
            await tab.ws.send_json({"type": "message", "text": "what colour?", "client_id": "c1", "attachments": [
                {"id": uploaded["id"], "name": uploaded["name"], "mime_type": "image/png"}]})
            await tab.reply(timeout=30)
        async with chat(port, "pics") as again:
            history = await again.next_frame("history")
    data_url = "data:image/png;base64," + base64.b64encode(picture).decode()
    assert (status, uploaded["kind"], uploaded["name"], uploaded["size"]) == (200, "image", "dot.png", len(picture))
    assert _user_parts(fake_openai.requests[-1]) == [
        {"type": "text", "text": "what colour?"}, {"type": "image_url", "image_url": {"url": data_url}}]
    assert [(m["role"], m["text"], m["images"]) for m in history["messages"]][:1] == [("user", "what colour?", [data_url])]
    assert history["messages"][1]["role"] == "assistant"


async def test_a_text_file_is_read_into_the_turn_as_on_other_platforms(fake_openai: FakeOpenAI, home: Path) -> None:
    """A small text file is inlined with its name (the media reader's rule), not described."""
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        port = web_port(gateway)
        async with chat(port, "files") as tab:
            _, uploaded = await upload(port, "files", "notes.md", b"# plan\n- ship it\n", "text/markdown")
            await tab.ws.send_json({"type": "message", "text": "", "client_id": "c1", "attachments": [
                {"id": uploaded["id"], "name": "notes.md", "mime_type": "text/markdown"}]})
            await tab.reply(timeout=30)
    assert _user_parts(fake_openai.requests[-1])[0]["text"] == "[file notes.md]\n```\n# plan\n- ship it\n\n```"


async def test_uploads_over_the_limit_or_empty_are_refused_with_one_line(fake_openai: FakeOpenAI, home: Path) -> None:
    """Over `gateway.max_attachment_bytes` (said or streamed) or empty: refused, nothing kept, one short line."""
    config = make_config(home, fake_openai.base_url, gateway={"max_attachment_bytes": 2048})
    async with started(config) as gateway:
        port = web_port(gateway)
        said = await upload(port, "c", "big.bin", b"x" * 4096, "application/octet-stream")

        async def chunks() -> Any:
            for _ in range(64):
                yield b"y" * 1024  # no Content-Length: the cap is checked while the body arrives

        async with aiohttp.ClientSession() as http, http.post(
            f"http://127.0.0.1:{port}/upload", params={"chat": "c", "name": "big.bin"}, data=chunks(),
        ) as response:
            streamed = (response.status, await response.json(content_type=None))
        empty = await upload(port, "c", "empty.txt", b"", "text/plain")
    assert said == (413, {"error": "That file is too large (the limit is 2 KB)."})
    assert streamed == said
    assert empty == (400, {"error": "That file is empty."})
    assert not [path for path in (home / "web_uploads").rglob("*") if path.is_file()]


async def test_another_chats_upload_cannot_be_named(fake_openai: FakeOpenAI, home: Path) -> None:
    """An upload id is only good in the chat that uploaded it: elsewhere one short line, and no turn."""
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        port = web_port(gateway)
        _, theirs = await upload(port, "victim", "secret.txt", b"private", "text/plain")
        async with chat(port, "intruder") as tab:
            await tab.ws.send_json({"type": "message", "text": "read this", "client_id": "c1", "attachments": [
                {"id": theirs["id"], "name": "secret.txt", "mime_type": "text/plain"}]})
            error = await tab.next_frame("error")
    assert error["text"] == "That upload is gone; please attach the file again."
    assert fake_openai.requests == []


async def test_uploads_need_the_token_and_the_pages_origin(fake_openai: FakeOpenAI, home: Path) -> None:
    """The upload route is guarded like the websocket: 401 without the token, 403 from a foreign Origin."""
    config = make_config(home, fake_openai.base_url, platforms={"web": {
        "enabled": True, "host": "127.0.0.1", "port": 0, "auth": "token", "token": "upload-token"}})
    async with started(config) as gateway:
        port = web_port(gateway)
        anonymous = await upload(port, "c", "a.png", png(), "image/png")
        foreign = await upload(port, "c", "a.png", png(), "image/png",
                               headers={"Origin": "http://evil.example", "Authorization": "Bearer upload-token"})
        signed = await upload(port, "c", "a.png", png(), "image/png", headers={"Authorization": "Bearer upload-token"})
    assert (anonymous[0], foreign[0], signed[0]) == (401, 403, 200)


async def test_a_chat_cannot_fill_the_disk_with_uploads(fake_openai: FakeOpenAI, home: Path) -> None:
    """One chat's waiting uploads stop at CHAT_BUDGET_FILES full-size files; another chat still uploads."""
    config = make_config(home, fake_openai.base_url, gateway={"max_attachment_bytes": 1024})
    async with started(config) as gateway:
        port = web_port(gateway)
        kept = [await upload(port, "greedy", f"{n}.bin", b"z" * 1024, "application/octet-stream")
                for n in range(CHAT_BUDGET_FILES)]
        refused = await upload(port, "greedy", "one-more.bin", b"z", "application/octet-stream")
        elsewhere = await upload(port, "other", "a.bin", b"z" * 1024, "application/octet-stream")
    assert [status for status, _ in kept] == [200] * CHAT_BUDGET_FILES
    assert refused == (429, {"error": "Too many files are waiting to be read here; try again later."})
    assert elsewhere[0] == 200
    assert sum(1 for path in (home / "web_uploads" / "greedy").iterdir()) == CHAT_BUDGET_FILES


def test_expired_uploads_are_pruned_while_running_and_free_the_store_budget(tmp_path: Path) -> None:
    clock = [time.time()]  # file ages are read from their real modification times
    store = UploadStore(tmp_path, store_budget=2048, clock=lambda: clock[0])
    store.open()
    store.put("a", "1.bin", "", b"x" * 2048)
    with pytest.raises(UploadsFull):
        store.put("b", "2.bin", "", b"y")
    clock[0] += KEEP_SECONDS + PRUNE_EVERY_SECONDS + 1  # a day later the first upload's turn ran long ago
    assert store.put("b", "2.bin", "", b"y").size == 1
    assert not any((tmp_path / "a").iterdir()) and len(list((tmp_path / "b").iterdir())) == 1
