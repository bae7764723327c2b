"""Image stripping (docs/design.md §3.5 step 8): old images become text placeholders.

Owns the rule that only the newest image keeps its payload: every image part
in a message before the newest image-bearing message becomes a short text
placeholder, so multi-megabyte base64 blobs stop riding every request.
Pure function; knows nothing of budgets.
"""
from __future__ import annotations

from collections.abc import Sequence

from agent.messages import ImagePart, Message, TextPart

IMAGE_PLACEHOLDER = "[Attached image — removed by context compression]"


def strip_old_images(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Replace image parts before the newest image-bearing message; return the list and the count."""
    newest = -1
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].images:
            newest = index
            break
    out = list(messages)
    stripped = 0
    for index in range(max(0, newest)):
        message = messages[index]
        if not isinstance(message.content, tuple) or not message.images:
            continue
        parts = tuple(
            TextPart(text=IMAGE_PLACEHOLDER) if isinstance(part, ImagePart) else part for part in message.content
        )
        stripped += len(message.images)
        out[index] = message.with_content(parts)
    return out, stripped
