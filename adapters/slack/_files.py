"""Slack files in: `url_private` downloaded with the bot token, only from `file_hosts`, within a byte cap.

Owns `file_policy` and `download`. Slack serves private files only with
`Authorization: Bearer <bot token>`; the token goes only to the configured
file origins (`platforms.slack.file_hosts`, default `https://files.slack.com`),
through the shared `FileFetcher` (no other host, no redirect elsewhere, the
address checked, the body capped). Without the token (or with a wrong one)
Slack answers with an HTML login page, so a `text/html` answer counts as a
failure rather than as the file. Knows nothing of sessions or agents; the
token never appears in an error.
"""
from __future__ import annotations

from collections.abc import Sequence

from adapters.base import AdapterError, Attachment, AttachmentTooLarge
from adapters.fetch import FetchPolicy, FileFetcher, parse_origin

from ._events import PLATFORM

DEFAULT_FILE_HOSTS = ("https://files.slack.com",)


def file_policy(file_hosts: Sequence[str], *, token: str) -> FetchPolicy:
    """Slack's allowed file origins: the default one is address-checked, any other was named by the operator.

    Raises:
        ValueError: an entry that is not scheme://host[:port].
    """
    defaults = {parse_origin(host) for host in DEFAULT_FILE_HOSTS}
    builtin = [host for host in file_hosts if parse_origin(host) in defaults]
    configured = [host for host in file_hosts if host not in builtin]
    return FetchPolicy.build(PLATFORM, builtin=builtin, configured=configured,
                             headers={"Authorization": f"Bearer {token}"})


async def download(attachment: Attachment, *, fetcher: FileFetcher, max_bytes: int) -> bytes:
    """The file's bytes from `attachment.url` (its `url_private`)."""
    if not attachment.url:
        raise AdapterError("the Slack file has no url_private", platform=PLATFORM)
    if attachment.size is not None and attachment.size > max_bytes:
        raise AttachmentTooLarge(f"file is {attachment.size} bytes, over {max_bytes}", platform=PLATFORM)
    fetched = await fetcher.fetch(attachment.url, max_bytes=max_bytes)
    if fetched.content_type == "text/html":
        raise AdapterError("Slack file download failed (an HTML sign-in page, not the file)", platform=PLATFORM)
    return fetched.data


__all__ = ["DEFAULT_FILE_HOSTS", "download", "file_policy"]
