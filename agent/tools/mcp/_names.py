"""Public names of MCP tools: `server__tool`, valid OpenAI function names (`^[a-zA-Z0-9_-]{1,64}$`).

Owns how a server's tool name becomes the name the model sees, and how a
chat's allowlist entry (a server name or a public tool name) selects tools.
Knows nothing of connections or chats.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Collection

SEPARATOR = "__"
MAX_NAME_CHARS = 64
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_CHARS = 8


def public_name(server: str, tool: str) -> str:
    """`server__tool` with invalid characters replaced; over 64 chars it is cut and ends in a short hash."""
    raw = f"{server}{SEPARATOR}{tool}"
    name = _INVALID.sub("_", raw)
    if len(name) <= MAX_NAME_CHARS and name == raw:
        return name
    digest = hashlib.sha256(raw.encode()).hexdigest()[:_HASH_CHARS]
    if len(name) <= MAX_NAME_CHARS - _HASH_CHARS - 1:
        return f"{name}_{digest}"
    return f"{name[: MAX_NAME_CHARS - _HASH_CHARS - 1]}_{digest}"


def allowed(server: str, public: str, allowlist: Collection[str] | None) -> bool:
    """Whether a tool passes an allowlist of server names and public tool names (None: every tool)."""
    return allowlist is None or server in allowlist or public in allowlist


__all__ = ["MAX_NAME_CHARS", "SEPARATOR", "allowed", "public_name"]
