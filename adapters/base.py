"""What every platform adapter shares: the normalised message types and the `PlatformAdapter` Protocol.

Adapters import only their SDK and this module (plus `adapters/text.py`). They
never import `gateway/` or `agent/` and never see session keys: they turn
platform events into `InboundMessage`s on a queue, and send, edit, type and
delete within the platform's limits.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from aiohttp import web

from chorus_errors import AdapterError as AdapterError  # re-exported: adapters raise it from here

ChatType: TypeAlias = Literal["dm", "group"]


class AttachmentTooLarge(AdapterError):
    """The attachment is over the byte cap; nothing was downloaded beyond it."""


class AttachmentRefused(AdapterError):
    """The attachment's URL (or a redirect) leads off the platform's own origins or to a non-public address.

    `host` and `reason` are for the operator's log; the user is told only that the file could not be fetched.
    """

    def __init__(self, host: str, reason: str, *, platform: str) -> None:
        super().__init__(f"refused to fetch from {host}: {reason}", platform=platform)
        self.host = host
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file on a message. `ref` is the adapter's own handle to fetch it (a Telegram file_id, a Slack
    url_private, a Discord CDN url); the gateway never interprets it, it hands it back to `fetch_attachment`.
    """

    kind: Literal["image", "file", "audio", "video"]
    url: str | None = None
    name: str | None = None
    mime_type: str | None = None
    size: int | None = None
    ref: str | None = None
    duration: float | None = None  # seconds, for voice notes and audio
    voice: bool = False  # a recorded voice note rather than an audio file


@dataclass(frozen=True, slots=True)
class ChatTarget:
    """Where a reply goes: a chat, optionally a thread or forum topic inside it."""

    platform: str
    chat_id: str
    thread_id: str | None = None


@dataclass(frozen=True, slots=True)
class Quote:
    """The message a user replied to (or the part of it they selected), as the adapter read it.

    `partial` is True for a selected part (Telegram `quote`); `text` is then only that part.
    The gateway renders it, labelled with its author, before the user's own text.
    """

    author_name: str
    text: str
    author_id: str | None = None
    message_id: str | None = None
    partial: bool = False
    author_is_bot: bool = False  # our own bot or another one: the label says so


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One platform message, normalised.

    `delivery_id` is unique per platform delivery (update_id, event_id,
    message id) and is what the gateway de-duplicates on across processes.
    `mentions_bot` / `replies_to_bot` are decided by the adapter, which alone
    knows the platform's mention syntax; a `/cmd@botname` is rewritten to
    `/cmd` with `mentions_bot=True`. `sender_is_bot`: another bot wrote it (our
    own messages never arrive). `quote`: what the message replied to or quoted.
    `edited`: a new text for the earlier message `message_id` (`previous_text`
    when the platform said what it was); `delivery_id` is then the edit's own.
    `traceparent`: the trace the message belongs to (set at intake, never by an adapter).
    """

    platform: str
    chat_id: str
    chat_type: ChatType
    user_id: str
    user_name: str
    text: str
    message_id: str
    timestamp: float
    thread_id: str | None = None
    mentions_bot: bool = False
    replies_to_bot: bool = False
    reply_to_message_id: str | None = None
    attachments: tuple[Attachment, ...] = ()
    delivery_id: str = ""
    # The sender's unique, platform-assigned handle (Telegram @username, Discord username, Slack name), which
    # allowlists may name; `user_name` is a display name anyone can set, so it is never matched. None: none.
    user_handle: str | None = None
    # A button press: the adapter's handle for answering the presser alone (a Telegram callback query id,
    # a Discord interaction id); the message's text is the pressed button's command. None: typed.
    interaction: str | None = None
    sender_is_bot: bool = False
    quote: Quote | None = None
    edited: bool = False
    previous_text: str | None = None
    # The sender's language as the platform reports it (Telegram `language_code` "zh-hans", a Discord
    # interaction's locale, the web page's navigator.language); None: not reported. The gateway decides.
    language: str | None = None
    # Made by the gateway's scheduler, never by an adapter: a job's prompt run as a turn in its chat. It passes
    # no allowlist or trigger (the job's owner was admitted when it was made), and nothing on the platform
    # carries its `message_id` (no reply-to, no reaction).
    scheduled: bool = False
    # The W3C `traceparent` of the span that took this message in, set by the gateway while tracing is on (adapters
    # leave it None). The journal keeps it with the message, so a replica that runs the message later continues
    # the same trace.
    traceparent: str | None = None
    kind: Literal["inbound"] = field(default="inbound")

    @property
    def target(self) -> ChatTarget:
        return ChatTarget(platform=self.platform, chat_id=self.chat_id, thread_id=self.thread_id)

    @property
    def dedup_key(self) -> str:
        return self.delivery_id or f"{self.platform}:{self.chat_id}:{self.message_id}"


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the bot sent, enough to edit or delete it later."""

    target: ChatTarget
    message_id: str


@dataclass(frozen=True, slots=True)
class PlatformLimits:
    max_message_chars: int
    supports_edit: bool = True
    min_edit_interval_seconds: float = 1.0
    markup: Literal["markdown", "markdown_v2", "mrkdwn", "html", "plain"] = "plain"
    # The adapter spaces (and merges) its own edits per chat: the gateway then adds no throttle of its own,
    # so exactly one throttle acts on each platform's edits.
    throttles_edits: bool = False


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """`chorus doctor`'s view of a platform: reachable, or why not and how to fix it."""

    platform: str
    ok: bool
    detail: str


@runtime_checkable
class AttachmentSource(Protocol):
    """An adapter that can download its platform's attachments."""

    async def fetch_attachment(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """The attachment's bytes.

        Raises:
            AttachmentTooLarge: the file is over `max_bytes` (checked before and while downloading).
            AdapterError: the platform refused or the download failed.
        """
        ...


Reaction: TypeAlias = Literal["received", "answered", "failed"]


@runtime_checkable
class Reacting(Protocol):
    """An adapter that can react to a message (`gateway.reactions`); it picks its platform's emoji."""

    async def react(self, target: ChatTarget, message_id: str, reaction: Reaction) -> None:
        """React to message `message_id` in `target` (👀 received, ✅ answered, ⚠️ failed, or the closest).

        Raises:
            AdapterError: the platform refused.
        """
        ...


@dataclass(frozen=True, slots=True)
class Liveness:
    """Whether an adapter is receiving: its last successful poll, receive or heartbeat, and why it is down.

    `alive` is False once nothing succeeded for longer than the adapter's own limit (a poll that hangs past its
    timeout counts as down); `detail` then says what failed, in words safe to log (no token).
    """

    alive: bool
    last_ok_seconds_ago: float | None  # None: nothing succeeded yet since start
    detail: str = ""


@runtime_checkable
class ReportsLiveness(Protocol):
    """An adapter that knows whether it is still receiving (read by `/readyz`, the dashboard and the metrics)."""

    def liveness(self) -> Liveness: ...


@dataclass(frozen=True, slots=True)
class Choice:
    """A button under a message: its label, and the command a press sends back as the presser's own message."""

    label: str
    command: str


@runtime_checkable
class ChoiceSender(Protocol):
    """An adapter that can put buttons under a message (Telegram inline keyboards, Discord components,
    Slack Block Kit). A press arrives as an `InboundMessage` from the presser whose text is the choice's
    command and whose `interaction` is set, so it passes the same allowlist as anything typed."""

    async def send_choices(self, target: ChatTarget, text: str, choices: Sequence[Choice]) -> list[SentMessage]: ...

    async def answer_privately(self, message: InboundMessage, text: str) -> bool:
        """Answer a press (`message.interaction`) so only the presser sees `text` ("" only acknowledges it).

        Returns False when the platform could not (the press expired): the caller may answer in the chat.
        """
        ...


@dataclass(frozen=True, slots=True)
class BotCommand:
    """One entry of a platform's command menu.

    `translations`: (language, description) pairs for platforms with a menu per user language (Telegram's
    setMyCommands `language_code`, Discord's `description_localizations`); `description` is the default.
    """

    name: str
    description: str
    translations: tuple[tuple[str, str], ...] = ()


class PlatformAdapter(Protocol):
    """A chat platform. `start` begins delivering inbound messages to the queue."""

    name: str
    limits: PlatformLimits

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        """Send `text`, split at the platform's limit; returns every message sent, in order."""
        ...

    async def edit(self, sent: SentMessage, text: str) -> None: ...

    async def typing(self, target: ChatTarget) -> None: ...

    async def delete(self, sent: SentMessage) -> None: ...

    async def probe(self) -> ProbeResult: ...

    def routes(self) -> list[web.RouteDef]:
        """HTTP routes served beside the admin routes (Telegram's webhook, Slack's Events API); usually none."""
        ...

    @property
    def can_send(self) -> bool:
        """False while another process owns this platform's sending (the poller lease); replies wait for it."""
        ...
