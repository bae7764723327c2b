"""Where a chat's notes live: an injective, traversal-proof map from chat id to directory.

Owns `chat_directory`. A chat id comes from a platform (or a CLI flag) and may
hold anything: `../`, `/`, `\\`, NUL, lookalike Unicode, thousands of
characters, or just `.`. The directory name is a readable ASCII slug plus a
hash of the *exact* id, so two distinct ids never share a directory and no id
can name a path outside `<home>/memories/`. The exact id is also recorded in
the directory (`.chat_id`) and checked on every open, so even a hash collision
would fail loudly instead of mixing two chats.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import unicodedata
from pathlib import Path
from typing import Final

MEMORIES_DIRNAME: Final = "memories"
CHAT_ID_FILENAME: Final = ".chat_id"
SLUG_MAX_CHARS: Final = 40
HASH_HEX_CHARS: Final = 20  # 80 bits: collisions are astronomically unlikely, and checked anyway
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class ChatIdError(ValueError):
    """A chat id that can never name a notes directory (empty), or a directory that belongs to another id."""


def _encode(chat_id: str) -> bytes:
    # surrogatepass: ids decoded leniently from a platform may hold lone surrogates.
    return chat_id.encode("utf-8", "surrogatepass")


def chat_dirname(chat_id: str) -> str:
    """The directory name for `chat_id`: `<slug>-<hash>`, ASCII only, never `.`/`..`, at most 61 chars.

    Raises:
        ChatIdError: the id is empty.
    """
    if not chat_id:
        raise ChatIdError("chat id must not be empty")
    ascii_text = unicodedata.normalize("NFKD", chat_id).encode("ascii", "ignore").decode("ascii")
    slug = _UNSAFE.sub("_", ascii_text).strip("_-")[:SLUG_MAX_CHARS].strip("_-") or "chat"
    digest = hashlib.sha256(_encode(chat_id)).hexdigest()[:HASH_HEX_CHARS]
    return f"{slug}-{digest}"


def chat_directory(home: Path, chat_id: str) -> Path:
    """`<home>/memories/<chat_dirname(chat_id)>` (not created here)."""
    return home / MEMORIES_DIRNAME / chat_dirname(chat_id)


def claim_directory(directory: Path, chat_id: str) -> None:
    """Create `directory` for `chat_id`, or check that it already belongs to it.

    Raises:
        ChatIdError: the directory records a different chat id (a hash collision).
    """
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / CHAT_ID_FILENAME
    expected = _encode(chat_id)
    try:
        recorded = marker.read_bytes()
    except FileNotFoundError:
        # temp file + rename: a concurrent reader sees no marker or the whole id, never a torn one
        fd, temp_name = tempfile.mkstemp(prefix=".chat_id.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(expected)
        os.replace(temp_name, marker)
        return
    if recorded != expected:
        raise ChatIdError(f"notes directory {directory.name} belongs to another chat; refusing to mix them")


def owner_of(directory: Path) -> str | None:
    """The chat id recorded in a notes directory, or None when unknown."""
    try:
        return (directory / CHAT_ID_FILENAME).read_bytes().decode("utf-8", "surrogatepass")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
