"""A fake Telegram Bot API server on loopback, for the real python-telegram-bot client.

Speaks the wire protocol PTB uses: `POST /bot<token>/<method>` with form-encoded
parameters (non-strings JSON-encoded), answered with `{"ok": ..., "result": ...}`.
It long-polls `getUpdates` (timeout capped at one second so teardown stays fast),
validates MarkdownV2 like Telegram and can be scripted to fail: an error answer
(`fail`), a dropped connection (`drop`), or a 502 page (`bad_gateway`).

It parses MarkdownV2 strictly, so formatted texts are checked as Telegram would.
Also builds update payloads (`private_chat`, `group_chat`, `user`, `message`, `entity`).
"""
from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import serve_loopback

# MarkdownV2, as the Bot API parses it (strict where its documentation is vague) ----

RESERVED = set("_*[]()~`>#+-=|{}.!")
_SIMPLE = {"*": "bold", "~": "strikethrough"}


class MarkupError(ValueError):
    """The text is not valid MarkdownV2; the message mirrors Telegram's description."""


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram's offsets and limits."""
    return len(text.encode("utf-16-le")) // 2


@dataclass
class _State:
    text: str
    out: list[str] = field(default_factory=list)
    stack: list[tuple[str, int, int]] = field(default_factory=list)  # kind, utf16 offset, byte offset
    entities: list[dict[str, Any]] = field(default_factory=list)
    offset: int = 0

    def emit(self, chars: str) -> None:
        self.out.append(chars)
        self.offset += utf16_len(chars)

    def byte_offset(self, index: int) -> int:
        return len(self.text[:index].encode("utf-8"))


def _toggle(state: _State, kind: str, index: int) -> None:
    open_kinds = [entry[0] for entry in state.stack]
    if kind in open_kinds:
        if state.stack[-1][0] != kind:
            raise MarkupError(f"Can't find end of {state.stack[-1][0]} entity at byte offset {state.stack[-1][2]}")
        _, start, _ = state.stack.pop()
        if state.offset > start:
            state.entities.append({"type": kind, "offset": start, "length": state.offset - start})
        return
    state.stack.append((kind, state.offset, state.byte_offset(index)))


def _read_code(state: _State, index: int, fence: str) -> int:
    """Consume a code (or pre) body starting at `index`; returns the index after the closing fence."""
    text = state.text
    body: list[str] = []
    while index < len(text):
        if text.startswith(fence, index):
            _finish_code(state, "".join(body), fence)
            return index + len(fence)
        char = text[index]
        if char == "\\":
            if index + 1 >= len(text) or text[index + 1] not in "`\\":
                raise MarkupError("Character '\\' is reserved and must be escaped inside code")
            body.append(text[index + 1])
            index += 2
            continue
        if char == "`":
            raise MarkupError("Character '`' is reserved and must be escaped inside code")
        body.append(char)
        index += 1
    raise MarkupError(f"Can't find end of {'pre' if fence == '```' else 'code'} entity at byte offset {state.byte_offset(index)}")


def _finish_code(state: _State, body: str, fence: str) -> None:
    entity: dict[str, Any] = {"type": "pre" if fence == "```" else "code"}
    if fence == "```":
        first, newline, rest = body.partition("\n")
        if newline and first and " " not in first:
            entity["language"] = first
            body = rest
        elif newline and not first:
            body = rest
    if body:
        entity.update(offset=state.offset, length=utf16_len(body))
        state.entities.append(entity)
    state.emit(body)


def _read_link_url(state: _State, index: int) -> tuple[str, int]:
    text = state.text
    if not text.startswith("(", index):
        raise MarkupError("Character ']' is reserved and must be escaped with the preceding '\\'")
    index += 1
    url: list[str] = []
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and 1 <= ord(text[index + 1]) <= 126:
            url.append(text[index + 1])
            index += 2
            continue
        if char == ")":
            return "".join(url), index + 1
        url.append(char)
        index += 1
    raise MarkupError("Can't find end of a URL")


def parse_markdown_v2(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Parse `text` as MarkdownV2; returns the visible text and its entities, or raises MarkupError."""
    state = _State(text)
    index = 0
    at_line_start = True
    while index < len(text):
        char = text[index]
        line_start, at_line_start = at_line_start, char == "\n"
        if char == "\\":
            if index + 1 >= len(text) or not 1 <= ord(text[index + 1]) <= 126:
                raise MarkupError("Character '\\' is reserved and must be escaped with the preceding '\\'")
            state.emit(text[index + 1])
            index += 2
        elif text.startswith("```", index) or char == "`":
            fence = "```" if text.startswith("```", index) else "`"
            if state.stack:
                raise MarkupError(f"Can't find end of {state.stack[-1][0]} entity at byte offset {state.stack[-1][2]}")
            index = _read_code(state, index + len(fence), fence)
        elif char in _SIMPLE:
            _toggle(state, _SIMPLE[char], index)
            index += 1
        elif char == "_":
            double = text.startswith("__", index)
            _toggle(state, "underline" if double else "italic", index)
            index += 2 if double else 1
        elif text.startswith("||", index):
            _toggle(state, "spoiler", index)
            index += 2
        elif char == "[":
            state.stack.append(("text_link", state.offset, state.byte_offset(index)))
            index += 1
        elif char == "]" and state.stack and state.stack[-1][0] == "text_link":
            url, index = _read_link_url(state, index + 1)
            _, start, _ = state.stack.pop()
            state.entities.append({"type": "text_link", "offset": start, "length": state.offset - start, "url": url})
        elif char == ">" and line_start:
            index += 1  # a blockquote line; the fake does not report the entity
        elif char in RESERVED:
            raise MarkupError(f"Character '{char}' is reserved and must be escaped with the preceding '\\'")
        else:
            state.emit(char)
            index += 1
    if state.stack:
        kind, _, byte_offset = state.stack[-1]
        raise MarkupError(f"Can't find end of {kind} entity at byte offset {byte_offset}")
    return "".join(state.out), sorted(state.entities, key=lambda entity: (entity["offset"], -entity["length"]))


# the server -----------------------------------------------------------------

TOKEN = "123456:TEST-token-abcdef"
BOT_ID = 123456
BOT_USERNAME = "chorus_bot"
MAX_POLL_SECONDS = 1.0
MAX_TEXT = 4096


@dataclass(frozen=True)
class Call:
    """One request the fake received."""

    method: str
    params: dict[str, Any]
    at: float
    via: str = ""  # the path prefix the client used (`/<via>/bot<token>/...`): tells several clients apart
    token: str = ""  # the bot token in the path (a token changed at runtime shows here)


@dataclass
class _Fault:
    kind: str  # "error", "drop", "html", "hang"
    status: int = 400
    description: str = ""
    retry_after: int | None = None


@dataclass
class _Chat:
    next_id: int = 1000
    texts: dict[int, str] = field(default_factory=dict)


def _decode(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


class FakeTelegram:
    """Use as `async with FakeTelegram() as fake:`; point PTB at `fake.base_url`."""

    def __init__(self, *, token: str = TOKEN, first_update_id: int = 1) -> None:
        """`first_update_id`: two fakes standing in for two bots on one Redis need update ids apart (de-duplication)."""
        self.token = token
        self.tokens: set[str] = set()  # more tokens answered as valid (a bot whose token was rotated)
        self.calls: list[Call] = []
        self.updates: list[dict[str, Any]] = []
        self._faults: dict[str, deque[_Fault]] = {}
        self._chats: dict[str, _Chat] = {}
        self._update_ids = itertools.count(first_update_id)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._closing = False
        self.port = 0
        self.files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, bytes), for getFile + downloads
        self.downloads: list[str] = []
        self.sent_via: dict[tuple[str, int], str] = {}  # (chat, message id) -> the `via` of the client that sent it

    @property
    def base_url(self) -> str:
        """The Bot API prefix; PTB appends the token and the method."""
        return f"http://127.0.0.1:{self.port}/bot"

    async def __aenter__(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
        app.router.add_post("/{via}/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        # Cancel a handler when its client goes away, as a real server's long poll ends with the connection.
        self._runner, self.port = await serve_loopback(app, handler_cancellation=True)
        return self

    async def __aexit__(self, *exc: object) -> None:
        async with self._changed:
            self._closing = True  # end pending long polls now rather than at their timeout
            self._changed.notify_all()
        if self._runner is not None:
            await self._runner.cleanup()

    # scripting -------------------------------------------------------------

    async def push_update(self, **payload: Any) -> int:
        """Queue an update (e.g. `message=...`) for getUpdates; returns its update_id."""
        update_id = next(self._update_ids)
        async with self._changed:
            self.updates.append({"update_id": update_id, **payload})
            self._changed.notify_all()
        return update_id

    def add_file(self, file_id: str, data: bytes, *, path: str | None = None) -> None:
        """Serve `data` for `file_id` through getFile and the file endpoint."""
        self.files[file_id] = (path or f"photos/{file_id}.jpg", data)

    def next_update_id(self) -> int:
        """Reserve an update_id, for payloads POSTed to a webhook instead of polled."""
        return next(self._update_ids)

    def fail(self, method: str, *, status: int, description: str, retry_after: int | None = None, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with a Bot API error."""
        fault = _Fault("error", status, description, retry_after)
        self._faults.setdefault(method, deque()).extend([fault] * times)

    def drop(self, method: str, *, times: int = 1) -> None:
        """Close the connection without an answer on the next `times` calls of `method`."""
        self._faults.setdefault(method, deque()).extend([_Fault("drop")] * times)

    def hang(self, method: str, *, times: int = 1) -> None:
        """Never answer the next `times` calls of `method` (until the client gives up or the server closes)."""
        self._faults.setdefault(method, deque()).extend([_Fault("hang")] * times)

    def bad_gateway(self, method: str, *, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with a proxy's 502 HTML page."""
        self._faults.setdefault(method, deque()).extend([_Fault("html", status=502)] * times)

    def calls_of(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    async def wait_for_calls(self, method: str, count: int = 1, *, timeout: float = 5.0) -> list[Call]:
        """Wait until `method` was called at least `count` times; returns those calls."""
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.calls_of(method)) >= count)
        return self.calls_of(method)

    # the API ---------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        form = await request.post()
        params = {key: _decode(str(value)) for key, value in form.items()}
        async with self._changed:
            self.calls.append(Call(method, params, time.monotonic(), request.match_info.get("via", ""),
                                   request.match_info["token"]))
            self._changed.notify_all()
        if request.match_info["token"] not in {self.token, *self.tokens}:
            return _error(401, "Unauthorized")
        queue = self._faults.get(method)
        if queue:
            fault = queue.popleft()
            if fault.kind == "drop":
                request.transport.close()  # type: ignore[union-attr]
                request.protocol.force_close()
                return web.Response()
            if fault.kind == "hang":
                async with self._changed:
                    await self._changed.wait_for(lambda: self._closing)
                return web.Response(status=503)
            if fault.kind == "html":
                return web.Response(status=502, text="<html><body>502 Bad Gateway</body></html>", content_type="text/html")
            return _error(fault.status, fault.description, fault.retry_after)
        handler = getattr(self, f"_api_{method}", None)
        if handler is None:
            return _error(404, "Not Found: method not found")
        try:
            result = await handler(params)
        except _ApiError as exc:
            return _error(400, exc.description)
        if method == "sendMessage" and isinstance(result, dict):
            self.sent_via[(str(params["chat_id"]), int(result["message_id"]))] = request.match_info.get("via", "")
        async with self._changed:
            self._changed.notify_all()  # the chat's texts changed: wake `wait_for_text`
        return web.json_response({"ok": True, "result": result})

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        path = request.match_info["path"]
        self.downloads.append(path)
        for file_path, data in self.files.values():
            if file_path == path:
                return web.Response(body=data, content_type="application/octet-stream")
        return web.Response(status=404)

    async def _api_getFile(self, params: dict[str, Any]) -> Any:
        found = self.files.get(str(params.get("file_id")))
        if found is None:
            raise _ApiError("Bad Request: invalid file_id")
        path, data = found
        return {"file_id": params["file_id"], "file_unique_id": f"u{params['file_id']}", "file_size": len(data),
                "file_path": path}

    async def _api_setMyCommands(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_getMe(self, params: dict[str, Any]) -> Any:
        return bot_user()

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_setWebhook(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_sendChatAction(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_setMessageReaction(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_getUpdates(self, params: dict[str, Any]) -> Any:
        offset = int(params.get("offset", 0) or 0)
        timeout = min(float(params.get("timeout", 0) or 0), MAX_POLL_SECONDS)
        async with self._changed:
            self.updates = [update for update in self.updates if update["update_id"] >= offset]
            if not self.updates and timeout > 0:
                try:
                    async with asyncio.timeout(timeout):
                        await self._changed.wait_for(lambda: bool(self.updates) or self._closing)
                except TimeoutError:
                    pass
            return list(self.updates)

    async def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        text, entities = _visible(params)
        chat = self._chats.setdefault(str(params["chat_id"]), _Chat())
        chat.next_id += 1
        chat.texts[chat.next_id] = text
        return _sent_message(params, chat.next_id, text, entities)

    async def _api_editMessageText(self, params: dict[str, Any]) -> Any:
        text, entities = _visible(params)
        chat = self._chats.setdefault(str(params["chat_id"]), _Chat())
        message_id = int(params["message_id"])
        if message_id not in chat.texts:
            raise _ApiError("Bad Request: message to edit not found")
        if chat.texts[message_id] == text:
            raise _ApiError(
                "Bad Request: message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        chat.texts[message_id] = text
        return _sent_message(params, message_id, text, entities)

    async def _api_deleteMessage(self, params: dict[str, Any]) -> Any:
        chat = self._chats.setdefault(str(params["chat_id"]), _Chat())
        if chat.texts.pop(int(params["message_id"]), None) is None:
            raise _ApiError("Bad Request: message to delete not found")
        return True

    async def wait_for_text(self, chat_id: int | str, needle: str, *, timeout: float = 10.0) -> str:
        """Wait until a message the bot sent to the chat shows a text containing `needle` (a finished stream
        shows no cursor); returns that text."""

        def found() -> str | None:
            for text in self.texts(chat_id).values():
                if needle in text and not text.endswith("▌"):
                    return text
            return None

        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(lambda: found() is not None)
        text = found()
        assert text is not None
        return text

    def texts(self, chat_id: int | str) -> dict[int, str]:
        """The visible text of every live message the bot sent to a chat."""
        return dict(self._chats.get(str(chat_id), _Chat()).texts)


class _ApiError(Exception):
    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


def _error(status: int, description: str, retry_after: int | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return web.json_response(body, status=status)


def _visible(params: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    raw = str(params.get("text", ""))
    entities: list[dict[str, Any]] = []
    text = raw
    if params.get("parse_mode") == "MarkdownV2":
        try:
            text, entities = parse_markdown_v2(raw)
        except MarkupError as exc:
            raise _ApiError(f"Bad Request: can't parse entities: {exc}") from None
    if not text.strip():
        raise _ApiError("Bad Request: message text is empty")
    if utf16_len(text) > MAX_TEXT:
        raise _ApiError("Bad Request: message is too long")
    return text, entities


def _sent_message(params: dict[str, Any], message_id: int, text: str, entities: list[dict[str, Any]]) -> dict[str, Any]:
    chat_id = int(params["chat_id"])
    message: dict[str, Any] = {
        "message_id": message_id,
        "date": int(time.time()),
        "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
        "from": bot_user(),
        "text": text,
    }
    if entities:
        message["entities"] = entities
    if "message_thread_id" in params:
        message["message_thread_id"] = int(params["message_thread_id"])
        message["is_topic_message"] = True
    return message


# payload builders ----------------------------------------------------------


def bot_user() -> dict[str, Any]:
    return {"id": BOT_ID, "is_bot": True, "first_name": "Chorus", "username": BOT_USERNAME}


def user(user_id: int = 777, first_name: str = "Ada", username: str | None = "ada",
         language_code: str | None = None) -> dict[str, Any]:
    """A sender; `language_code` is the IETF tag of their Telegram app's language (`zh-hans`, `de`)."""
    payload: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
    if username:
        payload["username"] = username
    if language_code:
        payload["language_code"] = language_code
    return payload


def private_chat(user_id: int = 777) -> dict[str, Any]:
    return {"id": user_id, "type": "private", "first_name": "Ada"}


def group_chat(chat_id: int = -1001234, *, kind: str = "supergroup", is_forum: bool = False) -> dict[str, Any]:
    payload: dict[str, Any] = {"id": chat_id, "type": kind, "title": "Team"}
    if is_forum:
        payload["is_forum"] = True
    return payload


def entity(text: str, part: str, kind: str, **extra: Any) -> dict[str, Any]:
    """An entity covering the first occurrence of `part` in `text`, in UTF-16 offsets."""
    start = text.index(part)
    return {"type": kind, "offset": utf16_len(text[:start]), "length": utf16_len(part), **extra}


_message_ids = itertools.count(1)


def message(chat: dict[str, Any], text: str, *, sender: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A text message payload; `extra` adds fields such as entities or reply_to_message."""
    return {
        "message_id": next(_message_ids),
        "date": 1_700_000_000,
        "chat": chat,
        "from": sender or user(),
        "text": text,
        **extra,
    }
