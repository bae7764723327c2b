"""Files a web chat client uploads before naming them in a message: kept on disk until the turn reads them.

Owns `UploadStore` (one directory, a sub-directory per chat, one file per upload) and the upload texts.

The page sends each picture or file with `POST /upload?chat=<id>&name=<file name>` (the body is the raw bytes,
`Content-Type` its type), then lists the returned ids in its next message frame. The adapter turns them into
`Attachment`s (`ref` = `<chat>/<id>`), so the gateway reads them as it reads every platform's attachments
(`AttachmentSource.fetch_attachment`, `gateway.max_attachment_bytes`, the image type check by magic number).
On disk rather than in memory: a turn replayed after a restart still finds its files. Uploads older than
`KEEP_SECONDS` are removed when the store opens.
"""
from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from adapters.base import AdapterError, Attachment, AttachmentTooLarge

KEEP_SECONDS = 24 * 3600.0
PRUNE_EVERY_SECONDS = 3600.0  # a running gateway removes expired uploads at most this often (and at start)
# What uploads may hold on disk while they wait, in attachments of the largest size: a chat cannot fill the
# disk for the others, and all chats together cannot fill it for the gateway.
CHAT_BUDGET_FILES = 20
STORE_BUDGET_FILES = 200
MAX_NAME_CHARS = 200
MAX_ATTACHMENTS = 10  # per message
_UPLOAD_ID = re.compile(r"[0-9a-f]{32}")
# The kind the gateway reads an attachment as, by the start of its type (anything else is a file).
KIND_BY_TYPE: tuple[tuple[str, Literal["image", "audio", "video"]], ...] = (
    ("image/", "image"), ("audio/", "audio"), ("video/", "video"),
)
# One short line each, shown to the user by the page (never a path or an internal name).
UPLOAD_TEXTS = {
    "too_large": "That file is too large (the limit is {limit}).",
    "empty": "That file is empty.",
    "not_found": "That upload is gone; please attach the file again.",
    "too_many": "At most {n} files per message.",
    "full": "Too many files are waiting to be read here; try again later.",
}


class UploadsFull(Exception):
    """Storing one more upload would pass a chat's or the store's budget."""


def too_large_text(limit: int) -> str:
    size = f"{limit / 1_000_000:.1f} MB" if limit >= 1_000_000 else f"{limit / 1_000:.0f} KB"
    return UPLOAD_TEXTS["too_large"].format(limit=size)


def kind_of(mime_type: str) -> Literal["image", "file", "audio", "video"]:
    lowered = mime_type.lower()
    for prefix, kind in KIND_BY_TYPE:
        if lowered.startswith(prefix):
            return kind
    return "file"


def clean_name(raw: str | None) -> str:
    """A file name for display and type guessing: no directories, no control characters, bounded."""
    name = (raw or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    return name[:MAX_NAME_CHARS] or "attachment"


@dataclass(frozen=True, slots=True)
class Upload:
    """One stored upload: `id` is what the page names in its message frame."""

    id: str
    name: str
    mime_type: str
    size: int

    def as_frame(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name, "mime_type": self.mime_type, "size": self.size,
                "kind": kind_of(self.mime_type)}


class UploadStore:
    """Uploads under `directory` (created on `open`), `<chat id>/<upload id>` each, within byte budgets.

    Args:
        directory: where uploads wait.
        chat_budget: bytes one chat's waiting uploads may hold (None: no limit).
        store_budget: bytes all waiting uploads may hold (None: no limit).
        clock: epoch seconds (file ages and pruning).
    """

    def __init__(self, directory: Path, *, chat_budget: int | None = None, store_budget: int | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self.chat_budget = chat_budget
        self.store_budget = store_budget
        self._clock = clock
        self._held = 0  # bytes on disk after the last prune, plus what was stored since
        self._pruned_at = float("-inf")

    def open(self) -> None:
        """Create the directory and remove uploads older than `KEEP_SECONDS` (their turns ran long ago)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._prune()

    def _prune(self) -> None:
        now = self._clock()
        cutoff, held = now - KEEP_SECONDS, 0
        for chat in self.directory.iterdir():
            if not chat.is_dir():
                continue
            for item in chat.iterdir():
                stat = item.stat()
                if stat.st_mtime < cutoff:
                    item.unlink(missing_ok=True)
                else:
                    held += stat.st_size
        self._held, self._pruned_at = held, now

    def put(self, chat_id: str, name: str, mime_type: str, data: bytes) -> Upload:
        """Store one upload; `UploadsFull` when it would pass the chat's or the store's budget."""
        if self._clock() - self._pruned_at > PRUNE_EVERY_SECONDS:
            self._prune()
        folder = self.directory / chat_id
        folder.mkdir(parents=True, exist_ok=True)
        chat_held = sum(item.stat().st_size for item in folder.iterdir())
        if (self.chat_budget is not None and chat_held + len(data) > self.chat_budget) or (
                self.store_budget is not None and self._held + len(data) > self.store_budget):
            raise UploadsFull(chat_id)
        upload = Upload(id=uuid.uuid4().hex, name=clean_name(name), mime_type=mime_type or "application/octet-stream",
                        size=len(data))
        (folder / upload.id).write_bytes(data)
        self._held += len(data)
        return upload

    def attachment(self, chat_id: str, upload_id: str, *, name: str, mime_type: str) -> Attachment | None:
        """The attachment for an upload of this chat (None: no such upload, or another chat's)."""
        if not _UPLOAD_ID.fullmatch(upload_id):
            return None
        path = self.directory / chat_id / upload_id
        if not path.is_file():
            return None
        mime = mime_type or "application/octet-stream"
        return Attachment(kind=kind_of(mime), name=clean_name(name), mime_type=mime, size=path.stat().st_size,
                          ref=f"{chat_id}/{upload_id}")

    def read(self, ref: str, *, max_bytes: int, platform: str) -> bytes:
        """The bytes of `ref`; `AttachmentTooLarge` over `max_bytes`, `AdapterError` when it is gone."""
        chat_id, _, upload_id = ref.partition("/")
        if not _UPLOAD_ID.fullmatch(upload_id) or "/" in chat_id or chat_id in ("", ".", ".."):
            raise AdapterError("not a web upload reference", platform=platform)
        path = self.directory / chat_id / upload_id
        try:
            if path.stat().st_size > max_bytes:
                raise AttachmentTooLarge(f"upload over {max_bytes} bytes", platform=platform)
            return path.read_bytes()
        except FileNotFoundError:
            raise AdapterError("the upload is gone", platform=platform) from None


__all__ = ["CHAT_BUDGET_FILES", "MAX_ATTACHMENTS", "STORE_BUDGET_FILES", "UPLOAD_TEXTS", "Upload", "UploadStore", "UploadsFull",
           "clean_name", "kind_of", "too_large_text"]
