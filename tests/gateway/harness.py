"""Test harness for the gateway: a config on a tmp home + the fake OpenAI, and a websocket chat client."""
from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from adapters.web import WebAdapter
from agent.messages import Message
from agent.model_client import Completion, OpenAIModelClient
from gateway.app import Gateway
from gateway.build import build_gateway
from gateway.config import ChorusConfig, parse_config
from gateway.delivery.outbound import STREAM_CURSOR

RECEIVE_TIMEOUT = 10.0


def make_config(home: Path, base_url: str, **sections: Any) -> ChorusConfig:
    """A config on `home` talking to the fake model; web on a free port; extra sections merged in."""
    raw: dict[str, Any] = {
        "home": str(home),
        "model": {"name": "fake-model", "base_url": base_url, "api_key": "sk-test-not-real", "context_length": 128000},
        "platforms": {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
        "admin": {"port": 0},
        "gateway": {"shutdown_grace_seconds": 2},
        # Background reviews would add model requests to the fake's log; tests that want them turn them on.
        "memory": {"nudge_interval": 0, "flush_min_turns": 0},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return parse_config(raw, env={})


def web_port(gateway: Gateway) -> int:
    adapter = gateway.parts.adapters["web"]
    assert isinstance(adapter, WebAdapter)
    return adapter.port


@asynccontextmanager
async def running(gateway: Gateway) -> AsyncIterator[Gateway]:
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.stop()


@asynccontextmanager
async def started(config: ChorusConfig, **parts: Any) -> AsyncIterator[Gateway]:
    async with running(build_gateway(config, **parts)) as gateway:
        yield gateway


class ChatClient:
    """One browser tab: a websocket on the web adapter with its own chat id."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, chat_id: str) -> None:
        self.ws = ws
        self.chat_id = chat_id
        self.frames: list[dict[str, Any]] = []
        self._counter = 0

    async def say(self, text: str, *, client_id: str | None = None, language: str | None = None) -> str:
        """Send `text`; `language` is what the page sends as the browser's `navigator.language`."""
        self._counter += 1
        client_id = client_id or f"m{self._counter}-{uuid.uuid4().hex[:6]}"
        frame = {"type": "message", "text": text, "client_id": client_id}
        await self.ws.send_json(frame | ({"language": language} if language is not None else {}))
        return client_id

    async def next_frame(self, *types: str, timeout: float = RECEIVE_TIMEOUT) -> dict[str, Any]:
        """The next frame of one of `types` (all kinds are kept in `frames`)."""
        while True:
            raw = await asyncio.wait_for(self.ws.receive(), timeout)
            if raw.type != aiohttp.WSMsgType.TEXT:
                raise ConnectionError(f"websocket closed: {raw.type}")
            frame: dict[str, Any] = json.loads(raw.data)
            self.frames.append(frame)
            if not types or frame["type"] in types:
                return frame

    async def reply(self, timeout: float = RECEIVE_TIMEOUT) -> str:
        """The final text of the next bot message (a streaming draft is followed to its last edit)."""
        frame = await self.next_frame("message", timeout=timeout)
        text = str(frame["text"])
        while text.endswith(STREAM_CURSOR):
            edit = await self.next_frame("edit", timeout=timeout)
            if edit["id"] == frame["id"]:
                text = str(edit["text"])
        return text

    async def answer_on_connect(self, timeout: float = RECEIVE_TIMEOUT) -> str:
        """The answer to the chat's last question, right after connecting: from the `history` frame when it is
        stored already (a reply stored while no page was open is shown from there, not sent again), else the
        next reply."""
        history = await self.next_frame("history", timeout=timeout)
        messages = history["messages"]
        if messages and messages[-1]["role"] == "assistant":
            return str(messages[-1]["text"])
        return await self.reply(timeout)

    async def reply_edit(self, message_id: str, timeout: float = RECEIVE_TIMEOUT) -> str:
        """The text of the first edit of `message_id` that is not a draft."""
        while True:
            edit = await self.next_frame("edit", timeout=timeout)
            if edit["id"] == message_id and not str(edit["text"]).endswith(STREAM_CURSOR):
                return str(edit["text"])

    async def replies(self, count: int, *, skip_prefix: str = "queued", timeout: float = RECEIVE_TIMEOUT) -> list[str]:
        """The next `count` bot messages that are not "queued" notices."""
        texts: list[str] = []
        while len(texts) < count:
            text = await self.reply(timeout)
            if not text.startswith(skip_prefix):
                texts.append(text)
        return texts


@asynccontextmanager
async def chat(port: int, chat_id: str | None = None) -> AsyncIterator[ChatClient]:
    chat_id = chat_id or uuid.uuid4().hex
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"http://127.0.0.1:{port}/ws?chat={chat_id}") as ws:
            client = ChatClient(ws, chat_id)
            hello = await client.next_frame("hello")
            assert hello["chat_id"] == chat_id
            yield client


class CountingClient:
    """The real OpenAI client, counting how many requests run at once (`peak`)."""

    def __init__(self, inner: OpenAIModelClient) -> None:
        self.inner = inner
        self.model = inner.model
        self.running = 0
        self.peak = 0

    async def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            return await self.inner.complete(messages, **kwargs)
        finally:
            self.running -= 1

    async def close(self) -> None:
        await self.inner.close()
