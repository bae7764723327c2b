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


def image_placeholder(part: ImagePart) -> str:
    """The text an old image becomes: what it was (type and size of a `data:` URL) and that it was removed."""
    head, comma, payload = part.url.partition(",")
    if not part.url.startswith("data:") or not comma:
        return IMAGE_PLACEHOLDER
    mime = head.removeprefix("data:").split(";", 1)[0] or "image"
    size = len(payload) * 3 // 4 if head.endswith(";base64") else len(payload)
    shown = f"{size / 1000:.0f} KB" if size >= 1000 else f"{size} bytes"
    return f"[Attached image ({mime}, {shown}) — removed by context compression]"


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
            TextPart(text=image_placeholder(part)) if isinstance(part, ImagePart) else part for part in message.content
        )
        stripped += len(message.images)
        out[index] = message.with_content(parts)
    return out, stripped
