"""The Slack Web API client as Chorus uses it: retries, rate limits, error translation.

Owns `build_client` (an `AsyncWebClient` with connection-error retries and a
bounded `Retry-After` retry), `RetryAfterHandler`, `translate` (SlackApiError
and transport errors → `AdapterError`) and `auth_hint` (what to tell an
operator about an auth error). Never logs or returns a token.
"""
from __future__ import annotations

import asyncio

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from adapters.base import AdapterError

from ._events import PLATFORM

DEFAULT_API_BASE_URL = "https://slack.com/api/"
# Waiting longer than this inside one send would stall a chat turn: beyond it
# the 429 surfaces as AdapterError(retry_after=...) and the gateway decides.
MAX_RETRY_AFTER_SECONDS = 10.0
API_TIMEOUT_SECONDS = 15
AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"})


def _retry_after(response: HttpResponse | None) -> float | None:
    if response is None:
        return None
    for name, values in response.headers.items():
        if name.lower() == "retry-after" and values:
            try:
                return max(0.0, float(values[0]))
            except ValueError:
                return None
    return None


class RetryAfterHandler(AsyncRetryHandler):
    """Retries a 429 once, after exactly the `Retry-After` seconds Slack asked for.

    slack_sdk's `AsyncRateLimitErrorRetryHandler` adds up to a second of
    jitter and waits however long Slack says; this one waits the stated time
    and only when it is at most `max_wait` seconds.
    """

    def __init__(self, *, max_retry_count: int = 1, max_wait: float = MAX_RETRY_AFTER_SECONDS) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait = max_wait

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        wait = _retry_after(response)
        return wait is not None and wait <= self.max_wait

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        state.next_attempt_requested = True
        await asyncio.sleep(_retry_after(response) or 0.0)
        state.increment_current_attempt()


def build_client(
    token: str, *, base_url: str | None, max_retry_after: float = MAX_RETRY_AFTER_SECONDS
) -> AsyncWebClient:
    """An `AsyncWebClient` for `token` (no I/O until the first call).

    Args:
        token: The bot token (`xoxb-…`).
        base_url: The Web API root; a missing trailing slash is added, because
            slack_sdk joins method names with `urljoin` and would otherwise
            drop the last path segment.
        max_retry_after: Longest `Retry-After` honoured by waiting.
    """
    url = base_url or DEFAULT_API_BASE_URL
    if not url.endswith("/"):
        url += "/"
    return AsyncWebClient(
        token=token,
        base_url=url,
        timeout=API_TIMEOUT_SECONDS,
        retry_handlers=[AsyncConnectionErrorRetryHandler(), RetryAfterHandler(max_wait=max_retry_after)],
    )


def auth_hint(error: str, *, token_key: str = "platforms.slack.bot_token") -> str:
    """An operator-facing explanation of a Slack auth error code (never includes the token)."""
    if error in AUTH_ERRORS:
        return f"{error}: check {token_key}"
    if error == "missing_scope":
        return f"{error}: add the needed OAuth scopes to the Slack app and reinstall it"
    return error


def translate(exc: BaseException, *, method: str, token_key: str = "platforms.slack.bot_token") -> AdapterError:
    """Map a slack_sdk or transport error to `AdapterError`, keeping status and retry_after as data.

    Args:
        exc: What slack_sdk or the transport raised.
        method: The Web API method, for the message.
        token_key: The config key an auth error should point the operator to.
    """
    if isinstance(exc, SlackApiError):
        status = exc.response.status_code
        error = str(exc.response.get("error") or "unknown_error")
        retry_after: float | None = None
        if status == 429:
            header = exc.response.headers.get("Retry-After") or exc.response.headers.get("retry-after")
            try:
                retry_after = float(header) if header is not None else 1.0
            except (TypeError, ValueError):
                retry_after = 1.0
        return AdapterError(
            f"slack {method} failed: {auth_hint(error, token_key=token_key)}", platform=PLATFORM, retry_after=retry_after, status=status
        )
    if isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError, OSError)):
        return AdapterError(f"slack {method} failed: cannot reach the Slack API ({type(exc).__name__})", platform=PLATFORM)
    return AdapterError(f"slack {method} failed: {type(exc).__name__}", platform=PLATFORM)
