"""Slack files in: `url_private` downloaded with the bot token, within a byte cap.

Owns `download`. Slack serves private files only with `Authorization: Bearer
<bot token>`; without it (or with a wrong one) it answers with an HTML login
page, so a `text/html` answer counts as a failure rather than as the file.
The body is read in chunks and abandoned as soon as it passes the cap. Knows
nothing of sessions or agents; the token never appears in an error.
"""
from __future__ import annotations

import aiohttp

from adapters.base import AdapterError, Attachment, AttachmentTooLarge

from ._events import PLATFORM

DOWNLOAD_TIMEOUT_SECONDS = 60.0
CHUNK_BYTES = 64 * 1024


async def download(attachment: Attachment, *, token: str, max_bytes: int) -> bytes:
    """The file's bytes from `attachment.url` (its `url_private`)."""
    if not attachment.url:
        raise AdapterError("the Slack file has no url_private", platform=PLATFORM)
    if attachment.size is not None and attachment.size > max_bytes:
        raise AttachmentTooLarge(f"file is {attachment.size} bytes, over {max_bytes}", platform=PLATFORM)
    timeout = aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_SECONDS)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as http, http.get(
            attachment.url, headers={"Authorization": f"Bearer {token}"}
        ) as response:
            if response.status != 200 or response.content_type == "text/html":
                raise AdapterError(f"Slack file download failed ({response.status})", platform=PLATFORM,
                                   status=response.status)
            data = bytearray()
            async for chunk in response.content.iter_chunked(CHUNK_BYTES):
                data.extend(chunk)
                if len(data) > max_bytes:
                    raise AttachmentTooLarge(f"file is over {max_bytes} bytes", platform=PLATFORM)
    except aiohttp.ClientError as exc:
        raise AdapterError(f"Slack file download failed: {type(exc).__name__}", platform=PLATFORM) from None
    return bytes(data)


__all__ = ["download"]
