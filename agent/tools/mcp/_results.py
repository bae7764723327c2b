"""What an MCP tool result becomes in the session: text, cut to `mcp.max_result_chars` with head and tail kept.

Owns `render_content` (MCP content blocks to text for the model) and
`cut_middle`. Pure functions; know nothing of connections.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from mcp import types

CUT_MARKER = "\n[… {cut:,} of {total:,} chars cut from the middle of this tool result …]\n"
HEAD_SHARE = 0.6  # the start of an output usually says what it is; the end says how it ended


def render_content(blocks: Sequence[types.ContentBlock], structured: object | None = None) -> str:
    """The text of a result: text blocks verbatim, other blocks as short bracketed stand-ins."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            parts.append(f"[image {block.mime_type}, {len(block.data) * 3 // 4:,} bytes]")
        elif isinstance(block, types.AudioContent):
            parts.append(f"[audio {block.mime_type}, {len(block.data) * 3 // 4:,} bytes]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(f"[resource {resource.uri}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[link {block.uri}]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def cut_middle(text: str, limit: int) -> str:
    """`text` if it fits in `limit` chars, else its head and tail around a marker, `limit` chars at most."""
    if len(text) <= limit:
        return text
    marker = CUT_MARKER.format(cut=len(text), total=len(text))  # longest form: sizes the kept parts
    keep = max(0, limit - len(marker))
    head = int(keep * HEAD_SHARE)
    tail = keep - head
    cut = len(text) - head - tail
    return text[:head] + CUT_MARKER.format(cut=cut, total=len(text)) + (text[len(text) - tail:] if tail else "")


__all__ = ["CUT_MARKER", "cut_middle", "render_content"]
