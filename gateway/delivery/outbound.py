"""Outgoing messages: replies through the outbox, notices, streaming previews, typing, edit throttling.

Owns `Delivery` (a reply is recorded in the `Outbox` before it is sent and
acknowledged after; pending ones are resent by `resend_pending`; one the
platform refuses for good, for a reason of its own, is set aside as a dead
letter so the others go on), the
per-chat edit throttle (about one edit per second, the adapter's
`min_edit_interval_seconds`), platform `retry_after` handling, `StreamPreview`
(a draft message edited as the reply streams) and `typing_while`. Knows
nothing of agents or sessions beyond the session key carried by an item.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import structlog

from adapters.base import AdapterError, ChatTarget, PlatformAdapter, SentMessage
from adapters.keyed import KeyedSend
from gateway.coord.base import OutboundItem, Outbox, PendingOutbound
from gateway.i18n import Phrase, say

log = structlog.get_logger(__name__)

SEND_CLAIM_TTL = 30.0
MAX_RETRY_AFTER = 30.0
TYPING_INTERVAL = 4.0
STREAM_DRAFT_AFTER = 0.5  # a reply that comes quicker than this is sent whole, without a draft
STREAM_CURSOR = " ▌"
STOP_FINISH_SECONDS = 5.0  # at most this long for a stopped turn to finish its draft
GIVE_UP_ATTEMPTS = 20
GIVE_UP_AFTER_SECONDS = 86_400.0  # a reply nobody could receive for a day is dropped (logged)
# A platform answer that sending again can never change: a bad request (an empty or malformed text, a chat that
# is gone), a bot that was blocked or removed, a chat that does not exist. 401 (a bad token) and 5xx are not.
PERMANENT_STATUSES = frozenset({400, 403, 404})


class SetAside(Protocol):
    """Where a reply the platform refused for good is kept for the operator (the dead letters)."""

    def put_reply(self, item_id: str, item: OutboundItem, *, error: str) -> object: ...


@dataclass(frozen=True, slots=True)
class SendFailure:
    """Why a reply did not go out; `permanent`: sending it again would fail the same way."""

    reason: str
    permanent: bool = False
    kind: str = ""  # what the dead letter shows: the error type and status, never the platform's text


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    sent: bool
    item_id: str
    reason: str


class EditThrottle:
    """At most one edit per `interval` per chat."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}

    def ready(self, target: ChatTarget, interval: float) -> bool:
        last = self._last.get((target.platform, target.chat_id))
        return last is None or self._clock() - last >= interval

    def delay(self, target: ChatTarget, interval: float) -> float:
        last = self._last.get((target.platform, target.chat_id))
        return 0.0 if last is None else max(0.0, interval - (self._clock() - last))

    def mark(self, target: ChatTarget) -> None:
        self._last[(target.platform, target.chat_id)] = self._clock()


def target_of(item: OutboundItem) -> ChatTarget:
    return ChatTarget(platform=item.platform, chat_id=item.chat_id, thread_id=item.thread_id)


def draft_of(item: OutboundItem) -> SentMessage | None:
    """The streamed draft a recorded reply finalises: sending it again is an edit, which repeats harmlessly."""
    return SentMessage(target=target_of(item), message_id=item.draft_id) if item.draft_id else None


class Delivery:
    """Sends through the adapters.

    Args:
        adapters: by platform name.
        outbox: where replies are recorded before sending.
        owner: this process's id (outbox claims).
        claim_ttl: seconds a claimed reply stays this sender's; a sender that dies leaves it to another after this.
        set_aside: where replies the platform refused for good are kept (None: only logged); they leave the outbox.
    """

    def __init__(
        self, *, adapters: Mapping[str, PlatformAdapter], outbox: Outbox, owner: str, claim_ttl: float = SEND_CLAIM_TTL,
        set_aside: SetAside | None = None,
    ) -> None:
        self._adapters = adapters
        self._outbox = outbox
        self._set_aside_box = set_aside
        self.set_aside_count = 0
        self._owner = owner
        self._claim_ttl = claim_ttl
        self.throttle = EditThrottle()
        self._in_flight: set[str] = set()
        self._not_ours: set[str] = set()  # recorded by another sender first (a shared outbox): never sent from here

    def _claimer(self, item_id: str) -> str:
        # One owner per item in this process: a retry here may re-claim, another process may not.
        return f"{self._owner}:{item_id}"

    def adapter(self, platform: str) -> PlatformAdapter | None:
        return self._adapters.get(platform)

    async def record(self, item: OutboundItem) -> str:
        """Record a reply (before anything is sent) and claim it for this sender."""
        item_id = await self._outbox.put(item)
        # Ours to send from now on: the resend loop must not pick it up as "pending" while the worker
        # threads are slow to answer the claim below (it would send it a second time).
        self._in_flight.add(item_id)
        try:
            claimed = await self._outbox.claim(item_id, owner=self._claimer(item_id), ttl=self._claim_ttl)
        except BaseException:
            self._in_flight.discard(item_id)  # cancelled or failed: the resend loop sends it
            raise
        if not claimed:
            self._not_ours.add(item_id)  # its first recorder (or whoever took it over) sends it, once
        return item_id

    async def send_recorded(self, item_id: str, item: OutboundItem) -> DeliveryResult:
        """Send a recorded reply (as the last edit of its draft, if it has one); ack it when it went out."""
        if item_id in self._not_ours:
            self._not_ours.discard(item_id)
            self._in_flight.discard(item_id)
            return DeliveryResult(False, item_id, "claimed by another sender")
        self._in_flight.add(item_id)
        try:
            failure = await self._send(item, key=item_id)
            if failure is not None and failure.permanent:
                await self._set_aside(item_id, item, failure)
                return DeliveryResult(False, item_id, failure.reason)
            if failure is not None:
                log.warning("delivery.pending", reason=failure.reason, item_id=item_id)
                return DeliveryResult(False, item_id, failure.reason)
            await self._outbox.ack(item_id)  # still in flight until acknowledged: the resend loop keeps off it
        finally:
            self._in_flight.discard(item_id)
        return DeliveryResult(True, item_id, "sent")

    async def _set_aside(self, item_id: str, item: OutboundItem, failure: SendFailure) -> None:
        """Take a reply the platform refused for good out of the outbox, into the dead letters (one error line)."""
        kept = None
        if self._set_aside_box is not None:
            kept = self._set_aside_box.put_reply(item_id, item, error=failure.kind or "refused")
        self.set_aside_count += 1
        log.error("delivery.set_aside", item_id=item_id, platform=item.platform, reason=failure.reason,
                  kept=kept is not None)
        await self._outbox.ack(item_id)

    async def deliver(self, item: OutboundItem) -> DeliveryResult:
        return await self.send_recorded(await self.record(item), item)

    async def resend_pending(self, *, older_than: float = 0.0) -> int:
        """Send every pending reply this process can claim; returns how many went out."""
        sent = 0
        for pending in await self._outbox.pending(older_than=older_than):
            adapter = self._adapters.get(pending.item.platform)
            if adapter is None or pending.id in self._in_flight or not adapter.can_send:
                continue  # another process (e.g. the token's poller) delivers it
            if not await self._outbox.claim(pending.id, owner=self._claimer(pending.id), ttl=self._claim_ttl):
                continue
            if pending.id in self._in_flight:
                continue  # recorded here while the claim was on its way: its turn sends it
            self._in_flight.add(pending.id)
            try:
                sent += await self._resend(pending)
            except Exception as exc:  # noqa: BLE001 - one reply never stops the others: it waits for the next round
                log.warning("delivery.resend_item_failed", item_id=pending.id, error=type(exc).__name__)
            finally:
                self._in_flight.discard(pending.id)
        return sent

    async def _resend(self, pending: PendingOutbound) -> int:
        """Send one pending reply; 1 when it went out. Set aside when refused for good, dropped when too old."""
        failure = await self._send(pending.item, key=pending.id)
        if failure is None:
            await self._outbox.ack(pending.id)
            return 1
        if failure.permanent:
            await self._set_aside(pending.id, pending.item, failure)
            return 0
        too_old = time.time() - pending.item.created_at > GIVE_UP_AFTER_SECONDS
        if pending.attempts >= GIVE_UP_ATTEMPTS or too_old:
            log.error("delivery.given_up", item_id=pending.id, attempts=pending.attempts, reason=failure.reason)
            await self._outbox.ack(pending.id)
        return 0

    async def _send(self, item: OutboundItem, *, key: str) -> SendFailure | None:
        """None when sent (as the last edit of its draft, if it has one), else why it was not.
        `key` (the outbox id) keys the post where the platform takes one."""
        adapter = self._adapters.get(item.platform)
        if adapter is None:
            return SendFailure(f"no adapter for platform {item.platform}")
        if not item.text.strip():
            return SendFailure("empty text", permanent=True, kind="empty text")
        target, draft = target_of(item), draft_of(item)
        for _ in range(2):
            try:
                if draft is not None and len(item.text) > adapter.limits.max_message_chars:
                    # Too long for one message: the draft goes, the reply is sent in parts.
                    with contextlib.suppress(AdapterError, ConnectionError, OSError):
                        await adapter.delete(draft)
                    draft = None
                if draft is not None and await self._finish_draft(adapter, draft, item.text):
                    return None
                draft = None
                # Platforms that drop a repeat sent under the same key: a reply resent after its sender died is not
                # doubled. Looked up at use: an adapter restarted after a config change replaces its entry.
                found = self._adapters.get(item.platform)
                keyed = found if isinstance(found, KeyedSend) else None
                if keyed is not None:
                    await keyed.send_once(target, item.text, key=key, reply_to=item.reply_to)
                else:
                    await adapter.send(target, item.text, reply_to=item.reply_to)
                return None
            except AdapterError as exc:
                if exc.retry_after is None or exc.retry_after > MAX_RETRY_AFTER:
                    permanent = exc.retry_after is None and exc.status in PERMANENT_STATUSES
                    return SendFailure(str(exc) or type(exc).__name__, permanent=permanent,
                                       kind=f"{type(exc).__name__} {exc.status}" if exc.status else type(exc).__name__)
                await asyncio.sleep(exc.retry_after)  # the platform asked for this wait
            except (ConnectionError, OSError) as exc:
                return SendFailure(type(exc).__name__)
            except ValueError as exc:  # the adapter refused the text itself (what no platform would take)
                return SendFailure(str(exc) or type(exc).__name__, permanent=True, kind=type(exc).__name__)
        return SendFailure("rate limited twice")

    async def _finish_draft(self, adapter: PlatformAdapter, draft: SentMessage, text: str) -> bool:
        """Edit the draft into the reply; False when the platform refuses for good (the draft was deleted, by a
        user or by a sender that died splitting a long reply): a second message then beats none."""
        try:
            await self._throttled_edit(adapter, draft, text, final=True)
        except AdapterError as exc:
            if exc.retry_after is not None:
                raise
            log.info("delivery.draft_gone", error=str(exc) or type(exc).__name__)
            return False
        return True

    async def _throttled_edit(self, adapter: PlatformAdapter, sent: SentMessage, text: str, *, final: bool) -> bool:
        if adapter.limits.throttles_edits:  # the adapter is this platform's one throttle
            await adapter.edit(sent, text)
            return True
        interval = adapter.limits.min_edit_interval_seconds
        if not final and not self.throttle.ready(sent.target, interval):
            return False
        if final:
            delay = self.throttle.delay(sent.target, interval)
            if delay:
                await asyncio.sleep(delay)  # a rate limit, not synchronisation
        self.throttle.mark(sent.target)
        await adapter.edit(sent, text)
        return True

    def can_edit(self, target: ChatTarget) -> bool:
        """Whether the platform of `target` edits sent messages."""
        adapter = self._adapters.get(target.platform)
        return adapter is not None and adapter.limits.supports_edit

    async def send_notice(self, target: ChatTarget, text: Phrase) -> SentMessage | None:
        """The gateway's own words (a notice, a refusal, "queued", a command's answer): only a catalogue `Phrase`."""
        return await self.send_text(target, text)

    async def edit_notice(self, sent: SentMessage, text: Phrase) -> bool:
        """Replace a notice with another of the gateway's own texts."""
        return await self.edit_text(sent, text, final=True)

    async def send_text(self, target: ChatTarget, text: str) -> SentMessage | None:
        """Best-effort message outside the outbox (the model's words; the gateway's own go by `send_notice`)."""
        adapter = self._adapters.get(target.platform)
        if adapter is None:
            return None
        try:
            sent = await adapter.send(target, text)
        except (AdapterError, ConnectionError, OSError) as exc:
            log.info("delivery.notice_failed", error=type(exc).__name__)
            return None
        return sent[0] if sent else None

    async def edit_text(self, sent: SentMessage, text: str, *, final: bool = True) -> bool:
        adapter = self._adapters.get(sent.target.platform)
        if adapter is None or not adapter.limits.supports_edit:
            if adapter is not None and final:
                await self.send_text(sent.target, text)
            return False
        try:
            return await self._throttled_edit(adapter, sent, text, final=final)
        except (AdapterError, ConnectionError, OSError) as exc:
            log.info("delivery.edit_failed", error=type(exc).__name__)
            return False


class StreamPreview:
    """Shows a reply while it streams: a draft message, edited at the chat's edit rate.

    Quick replies (under `STREAM_DRAFT_AFTER` seconds) never get a draft. `draft` is one sent before (by a
    replica that died mid-stream): the preview edits it instead of sending another. `on_draft` is told of a
    new draft once it was sent, so that a replica taking this turn over can do the same.
    """

    def __init__(
        self, delivery: Delivery, target: ChatTarget, *, language: str, draft: SentMessage | None = None,
        on_draft: Callable[[SentMessage], Awaitable[None]] | None = None, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._delivery = delivery
        self._target = target
        self._language = language  # of "(stopped)" on a stopped draft that had no text yet
        self._clock = clock
        self._started = clock()
        self._text: list[str] = []
        self.draft = draft
        self._on_draft = on_draft
        self._showing: asyncio.Task[None] | None = None

    async def __call__(self, delta: str) -> None:
        """Never waits for the platform: one preview edit is in flight at a time, the stream reads on."""
        self._text.append(delta)
        if self._showing is not None or self._clock() - self._started < STREAM_DRAFT_AFTER:
            return
        self._showing = asyncio.create_task(self._show("".join(self._text) + STREAM_CURSOR))

    async def _show(self, text: str) -> None:
        try:
            if self.draft is None:
                self.draft = await self._delivery.send_text(self._target, text)
                if self.draft is not None and self._on_draft is not None:
                    await self._on_draft(self.draft)
            else:
                await self._delivery.edit_text(self.draft, text, final=False)
        finally:
            self._showing = None

    async def settle(self) -> None:
        """Wait for the preview edit in flight, so the final reply is the draft's last edit."""
        showing = self._showing
        if showing is not None:
            await showing

    def reset(self) -> None:
        self._text.clear()

    @property
    def text(self) -> str:
        """What streamed so far (without the cursor)."""
        return "".join(self._text)

    async def finish(self) -> None:
        """The turn was stopped: the draft becomes a finished message, what streamed so far marked stopped."""
        await self.settle()
        if self.draft is not None:
            await self._delivery.edit_text(self.draft, stopped_text(self.text, say(self._language, "stream.stopped")), final=True)


def stopped_text(partial: str, mark: str) -> str:
    """A reply stopped from the chat, as its draft shows it and as the session keeps it: the text so far, then `mark`
    (the catalogue's "stream.stopped" in the chat's language) on a line of its own."""
    kept = partial.rstrip()
    return f"{kept}\n\n{mark}" if kept else mark


def typing_while(adapter: PlatformAdapter | None, target: ChatTarget) -> Typing:
    """Show "typing…" every few seconds while the body of `async with typing_while(...)` runs."""
    return Typing(adapter, target)


class Typing:
    """`typing_while`'s context: "typing…" every `TYPING_INTERVAL` seconds while the body runs.

    The typing task is made by a callback on the next loop turn, as a new task would first run then: a body
    that finishes without yielding (an instant answer) costs no task, no cancel and no two turns awaiting it.
    A class, not an `asynccontextmanager`: every turn enters one.
    """

    __slots__ = ("_adapter", "_starting", "_target", "_task")

    def __init__(self, adapter: PlatformAdapter | None, target: ChatTarget) -> None:
        self._adapter = adapter
        self._target = target
        self._task: asyncio.Task[None] | None = None
        self._starting: asyncio.Handle | None = None

    async def __aenter__(self) -> None:
        if self._adapter is not None:
            self._starting = asyncio.get_running_loop().call_soon(self._start)

    async def __aexit__(self, *exc: object) -> None:
        if self._starting is not None:
            self._starting.cancel()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _start(self) -> None:
        self._starting = None
        self._task = asyncio.create_task(self._keep_typing(), name="typing")

    async def _keep_typing(self) -> None:
        adapter = self._adapter
        assert adapter is not None
        while True:
            with contextlib.suppress(AdapterError, ConnectionError, OSError):
                await adapter.typing(self._target)
            await asyncio.sleep(TYPING_INTERVAL)  # a refresh timer


__all__ = ["Delivery", "DeliveryResult", "SendFailure", "SetAside", "EditThrottle", "StreamPreview", "Typing", "stopped_text",
           "typing_while"]
