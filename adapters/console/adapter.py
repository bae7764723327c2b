"""`ConsoleAdapter`: one DM chat on the terminal.

Owns reading lines from an input stream (stdin by default) and printing
replies. Each line is one inbound message in the chat `console`; replies are
printed as `chorus> …`. Edits are printed as new lines (a terminal cannot
rewrite history), so the gateway does not stream to it. Knows nothing of the
gateway or agents.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import time
from typing import TextIO

from aiohttp import web

from adapters.base import ChatTarget, InboundMessage, PlatformLimits, ProbeResult, SentMessage
from adapters.normalize import normalize_inbound

PLATFORM = "console"
CHAT_ID = "console"
CONSOLE_LIMITS = PlatformLimits(max_message_chars=1_000_000, supports_edit=False, min_edit_interval_seconds=1.0)
PROMPT = "chorus> "


def _terminal_language() -> str | None:
    """The terminal's language as POSIX sets it (`LC_ALL`, `LC_MESSAGES`, `LANG`: "de_DE.UTF-8" → "de_DE")."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "").split(".", 1)[0]
        if value and value not in ("C", "POSIX"):
            return value
    return None


class ConsoleAdapter:
    """Terminal chat.

    Args:
        reader: where lines come from; None connects to stdin on `start`.
        output: where replies are written (stdout by default).
        user_name: the name given to the person typing.
    """

    name = PLATFORM
    limits = CONSOLE_LIMITS

    def __init__(
        self, *, reader: asyncio.StreamReader | None = None, output: TextIO | None = None, user_name: str = "you"
    ) -> None:
        self._reader = reader
        self._output = output or sys.stdout
        self._user_name = user_name
        self._task: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._lines = itertools.count(1)
        self._started_at = 0.0

    @property
    def started(self) -> bool:
        return self._task is not None

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        if self._task is not None:
            raise RuntimeError("ConsoleAdapter is already started; call stop() first")
        self._started_at = time.time()
        reader = self._reader or await self._stdin_reader()
        self._task = asyncio.create_task(self._read(reader, inbound), name="console-reader")
        self._write("type a message and press Enter (/help for commands)")

    async def _stdin_reader(self) -> asyncio.StreamReader:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        return reader

    async def _read(self, reader: asyncio.StreamReader, inbound: asyncio.Queue[InboundMessage]) -> None:
        while True:
            raw = await reader.readline()
            if not raw:
                return
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            number = next(self._lines)
            await inbound.put(
                normalize_inbound(InboundMessage(
                    platform=PLATFORM,
                    chat_id=CHAT_ID,
                    chat_type="dm",
                    user_id=CHAT_ID,
                    user_name=self._user_name,
                    text=text,
                    message_id=str(number),
                    timestamp=time.time(),
                    delivery_id=f"{PLATFORM}:{self._started_at:.6f}:{number}",
                    language=_terminal_language(),
                ))
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _write(self, text: str) -> None:
        self._output.write(f"{PROMPT}{text}\n")
        self._output.flush()

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        self._write(text)
        return [SentMessage(target=target, message_id=str(next(self._ids)))]

    async def edit(self, sent: SentMessage, text: str) -> None:
        self._write(text)

    async def typing(self, target: ChatTarget) -> None:
        return None

    async def delete(self, sent: SentMessage) -> None:
        return None

    def routes(self) -> list[web.RouteDef]:
        return []  # nothing to serve beside the admin routes

    @property
    def can_send(self) -> bool:
        return True

    async def probe(self) -> ProbeResult:
        return ProbeResult(PLATFORM, True, "terminal")


__all__ = ["CONSOLE_LIMITS", "ConsoleAdapter"]
