"""Attachments into the user's turn: pictures as image parts, voice as text, small text files inlined.

Owns `MediaReader.user_turn`: for each attachment of an inbound message it
asks the platform's adapter for the bytes (`AttachmentSource`, within
`gateway.max_attachment_bytes`) and turns them into message content:

- an image becomes a `data:` URL image part, byte for byte as received (never
  re-encoded), when `model.vision` is true, else a one-line description;
- a voice note or audio file goes to the `Transcriber` and its transcript
  becomes text marked as a voice message with its duration (without
  transcription the user is told voice is not enabled);
- a small text file (plain text, Markdown, JSON, source code up to
  `gateway.max_text_file_bytes`) is inlined with its name; anything else is
  described in one line.

A file that is too large, cannot be read, or lives somewhere the platform's
fetch policy refuses (`AttachmentRefused`: off its origins, a private
address) ends in a short reply to the user (`TurnRefused`) and no model call. Also `describe`, the one-line text used for
messages recorded as context without fetching. Knows the platforms only
through the adapters' `AttachmentSource` capability.
"""
from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

import structlog

from adapters.base import (
    AdapterError,
    Attachment,
    AttachmentRefused,
    AttachmentSource,
    AttachmentTooLarge,
    InboundMessage,
)
from agent.messages import ContentPart, ImagePart, Message, TextPart
from agent.transcription import Transcriber, TranscriptionFailed
from gateway.i18n import Phrase, msgid, say

log = structlog.get_logger(__name__)

TEXT_SUFFIXES = frozenset({
    ".txt", ".md", ".markdown", ".rst", ".json", ".jsonl", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".csv",
    ".tsv", ".log", ".xml", ".html", ".css", ".py", ".js", ".ts", ".tsx", ".jsx", ".java", ".kt", ".go", ".rs",
    ".c", ".h", ".cpp", ".hpp", ".cs", ".rb", ".php", ".sh", ".sql", ".swift", ".lua", ".r", ".scala",
})
TEXT_MIME_TYPES = frozenset({"application/json", "application/xml", "application/x-yaml", "application/toml",
                             "application/x-sh", "application/javascript", "application/sql"})
# Magic numbers of the formats vision models accept: the bytes decide, not the file name.
_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


@dataclass(frozen=True, slots=True)
class MediaSettings:
    vision: bool = True
    max_attachment_bytes: int = 10_000_000
    max_text_file_bytes: int = 65_536


@dataclass(frozen=True, slots=True)
class TurnRefused:
    """The turn is not run; the user gets the text `key` (one short line, its `fields` filled)."""

    key: str  # a msgid
    reason: str  # for the log
    fields: Mapping[str, object] = field(default_factory=dict)

    def said(self, language: str) -> Phrase:
        return say(language, self.key, **self.fields)


def human_size(size: int) -> str:
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    if size >= 1_000:
        return f"{size / 1_000:.0f} KB"
    return f"{size} bytes"


def image_mime(data: bytes) -> str | None:
    """The image type from the first bytes (None: not an image a model can read)."""
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return mime
    if len(data) > 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_text_file(attachment: Attachment) -> bool:
    mime = (attachment.mime_type or "").lower()
    if mime.startswith("text/") or mime in TEXT_MIME_TYPES:
        return True
    return PurePath(attachment.name or "").suffix.lower() in TEXT_SUFFIXES


def describe(attachment: Attachment) -> str:
    """One line naming an attachment: kind, name, type, size, duration."""
    label = "voice message" if attachment.voice else {"image": "image", "file": "file", "audio": "audio",
                                                       "video": "video"}[attachment.kind]
    details = [d for d in (attachment.name, attachment.mime_type) if d]
    if attachment.size:
        details.append(human_size(attachment.size))
    if attachment.duration:
        details.append(f"{attachment.duration:.0f}s")
    return f"[{label}: {', '.join(details)}]" if details else f"[{label}]"


def describe_all(message: InboundMessage) -> str:
    """The message's text followed by a description of each attachment (for recorded context)."""
    lines = [message.text] if message.text.strip() else []
    lines.extend(describe(a) for a in message.attachments)
    return "\n".join(lines)


class MediaReader:
    """Builds the user message of a turn from an inbound message and its attachments.

    Args:
        sources: the adapters that can download attachments, by platform.
        settings: vision and the byte caps.
        transcriber: speech to text (None: voice is not enabled).
    """

    def __init__(
        self,
        sources: Mapping[str, AttachmentSource],
        settings: MediaSettings,
        *,
        transcriber: Transcriber | None = None,
    ) -> None:
        self._sources = sources
        self.settings = settings
        self._transcriber = transcriber

    def follow(self, settings: MediaSettings, transcriber: Transcriber | None) -> Transcriber | None:
        """Caps, vision and transcription from a changed config; returns the transcriber replaced (to close)."""
        old, self.settings, self._transcriber = self._transcriber, settings, transcriber
        return old

    async def user_turn(self, message: InboundMessage, *, prefix: str = "") -> Message | TurnRefused:
        """The user message (`prefix` is the sender's name in shared sessions), or why the turn is refused."""
        texts = [message.text] if message.text.strip() else []
        images: list[ImagePart] = []
        for attachment in message.attachments:
            outcome = await self._read(message.platform, attachment)
            if isinstance(outcome, TurnRefused):
                log.info("media.refused", kind=attachment.kind, reason=outcome.reason)
                return outcome
            if isinstance(outcome, ImagePart):
                images.append(outcome)
            else:
                texts.append(outcome)
        text = "\n".join(texts)
        if not images:
            return Message(role="user", content=prefix + (text or "(empty message)"))
        lead = text or ("(sent an image)" if prefix else "")
        parts: list[ContentPart] = [TextPart(prefix + lead)] if prefix or lead else []
        parts.extend(images)
        return Message(role="user", content=tuple(parts))

    async def _read(self, platform: str, attachment: Attachment) -> ImagePart | str | TurnRefused:
        if attachment.kind == "image":
            if not self.settings.vision:
                return describe(attachment)[:-1] + " — this model cannot see images]"
            return await self._image(platform, attachment)
        if attachment.kind == "audio":
            return await self._audio(platform, attachment)
        if attachment.kind == "file" and is_text_file(attachment):
            return await self._text_file(platform, attachment)
        return describe(attachment)

    async def _fetch(self, platform: str, attachment: Attachment, cap: int) -> bytes | TurnRefused:
        source = self._sources.get(platform)
        if source is None:
            return TurnRefused(msgid("media.fetch_failed"), f"{platform} cannot download attachments")
        try:
            return await source.fetch_attachment(attachment, max_bytes=cap)
        except AttachmentTooLarge:
            size = human_size(attachment.size) if attachment.size else "> " + human_size(cap)
            return TurnRefused(msgid("media.too_large"), "too large", {"size": size, "limit": human_size(cap)})
        except AttachmentRefused:  # the adapter's fetcher logged the host and the reason
            return TurnRefused(msgid("media.fetch_refused"), "fetch refused")
        except AdapterError as exc:
            log.warning("media.fetch_failed", platform=platform, kind=attachment.kind, error=type(exc).__name__)
            return TurnRefused(msgid("media.fetch_failed"), "download failed")

    async def _image(self, platform: str, attachment: Attachment) -> ImagePart | TurnRefused:
        data = await self._fetch(platform, attachment, self.settings.max_attachment_bytes)
        if isinstance(data, TurnRefused):
            return data
        mime = image_mime(data)
        if mime is None:
            return TurnRefused(msgid("media.unreadable_image"), "not an image")
        return ImagePart(url=f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}")

    async def _audio(self, platform: str, attachment: Attachment) -> str | TurnRefused:
        if self._transcriber is None:
            return TurnRefused(msgid("media.voice_off"), "transcription disabled")
        data = await self._fetch(platform, attachment, self.settings.max_attachment_bytes)
        if isinstance(data, TurnRefused):
            return data
        name = attachment.name or ("voice.ogg" if attachment.voice else "audio")
        try:
            transcript = await self._transcriber.transcribe(data, filename=name, mime_type=attachment.mime_type)
        except TranscriptionFailed as exc:
            log.warning("media.transcription_failed", status=exc.status)
            return TurnRefused(msgid("media.transcription_failed"), "transcription failed")
        label = "voice message" if attachment.voice else f"audio file {name}"
        duration = f", {attachment.duration:.0f}s" if attachment.duration else ""
        return f"[{label}{duration}, transcribed] {transcript or '(no speech)'}"

    async def _text_file(self, platform: str, attachment: Attachment) -> str | TurnRefused:
        cap = self.settings.max_text_file_bytes
        if attachment.size is not None and attachment.size > cap:
            return describe(attachment)[:-1] + " — too large to read inline]"
        data = await self._fetch(platform, attachment, cap)
        if isinstance(data, TurnRefused):
            return describe(attachment)[:-1] + " — too large to read inline]" if data.reason == "too large" else data
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError:
            return describe(attachment)[:-1] + " — not UTF-8 text]"
        return f"[file {attachment.name or 'attachment'}]\n```\n{body}\n```"


__all__ = [
    "MediaReader", "MediaSettings",
    "TurnRefused", "describe", "describe_all", "image_mime", "is_text_file",
]
