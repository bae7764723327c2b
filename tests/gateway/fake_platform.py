"""A scripted chat platform for gateway tests: inject inbound messages, observe what the gateway sends."""
from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass

from aiohttp import web

from adapters.base import ChatTarget, InboundMessage, PlatformLimits, ProbeResult, SentMessage
from gateway.delivery.outbound import STREAM_CURSOR


@dataclass(frozen=True, slots=True)
class Outgoing:
    kind: str  # "send" | "edit"
    chat_id: str
    text: str
    message_id: str


class FakePlatform:
    """`PlatformAdapter` with no network: `inject` delivers, `outgoing` records sends and edits."""

    limits = PlatformLimits(max_message_chars=4000, supports_edit=True, min_edit_interval_seconds=0.0)

    def __init__(self, name: str = "fakechat") -> None:
        self.name = name
        self.queue: asyncio.Queue[InboundMessage] | None = None
        self.outgoing: list[Outgoing] = []
        self.typing_count = 0
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        self.queue = inbound

    async def stop(self) -> None:
        self.queue = None

    async def inject(
        self,
        text: str,
        *,
        chat_id: str = "c1",
        chat_type: str = "dm",
        user_id: str = "u1",
        user_name: str = "alice",
        mentions_bot: bool = False,
        replies_to_bot: bool = False,
        thread_id: str | None = None,
        delivery_id: str | None = None,
        sender_is_bot: bool = False,
        message_id: str | None = None,
        edited: bool = False,
    ) -> None:
        assert self.queue is not None, "start the gateway first"
        number = next(self._ids)
        await self.queue.put(
            InboundMessage(
                platform=self.name, chat_id=chat_id, chat_type=chat_type,  # type: ignore[arg-type]
                user_id=user_id, user_name=user_name, text=text, message_id=message_id or f"in{number}",
                timestamp=time.time(), thread_id=thread_id, mentions_bot=mentions_bot,
                replies_to_bot=replies_to_bot, delivery_id=delivery_id or f"{self.name}:{number}",
                sender_is_bot=sender_is_bot, edited=edited,
            )
        )

    async def _record(self, item: Outgoing) -> None:
        async with self._changed:
            self.outgoing.append(item)
            self._changed.notify_all()

    async def wait_for(self, count: int, *, timeout: float = 10.0) -> list[Outgoing]:
        """Wait until at least `count` sends/edits were made; returns them all."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: len(self.outgoing) >= count), timeout)
            return list(self.outgoing)

    async def wait_text(self, predicate: str, *, timeout: float = 10.0) -> Outgoing:
        """Wait for a send or edit whose text contains `predicate`."""
        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: any(predicate in o.text for o in self.outgoing)), timeout
            )
            return next(o for o in self.outgoing if predicate in o.text)

    async def wait_final(self, prefix: str, *, timeout: float = 10.0) -> str:
        """Wait for a message whose final text (a streamed draft's last edit) starts with `prefix`."""
        def found() -> str | None:
            return next((t for t in self.texts() if t.startswith(prefix) and not t.endswith(STREAM_CURSOR)), None)

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: found() is not None), timeout)
            text = found()
            assert text is not None
            return text

    def texts(self) -> list[str]:
        """The final text of every sent message (edits applied), in send order."""
        final: dict[str, str] = {}
        for item in self.outgoing:
            if item.kind == "send" or item.message_id in final:
                final[item.message_id] = item.text
        return list(final.values())

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        message_id = f"out{next(self._ids)}"
        await self._record(Outgoing("send", target.chat_id, text, message_id))
        return [SentMessage(target=target, message_id=message_id)]

    async def edit(self, sent: SentMessage, text: str) -> None:
        await self._record(Outgoing("edit", sent.target.chat_id, text, sent.message_id))

    async def typing(self, target: ChatTarget) -> None:
        self.typing_count += 1

    async def delete(self, sent: SentMessage) -> None:
        return None

    def routes(self) -> list[web.RouteDef]:
        return []  # nothing to serve beside the admin routes

    @property
    def can_send(self) -> bool:
        return True

    async def probe(self) -> ProbeResult:
        return ProbeResult(self.name, True, "fake")
