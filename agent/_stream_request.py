"""The streaming chat-completion POST, sent over aiohttp, failing as the SDK fails.

Owns `StreamRequests` and `StreamResponse`. The SDK's request path (options,
header merging, auth hooks, response wrapping) and its pure-Python HTTP stack
(httpx, httpcore, h11, anyio) cost most of a streamed turn's CPU; the hot call
needs none of it: a prepared body, fixed headers (the SDK's own
`default_headers` plus the bearer key) and the open response, which aiohttp
(C-parsed HTTP, no extra async layer) gives for about a third of the CPU.
Transport settings follow the SDK's client: the same TLS trust
(`httpx2.create_ssl_context`, which honours `SSL_CERT_FILE`), proxies from the
environment, the timeout on connect and on every read, idle connections kept
5 s. Failures are the SDK's public exception types built the way it builds
them (`APIStatusError` subclasses by status with the same message, `body` and
response headers, `APITimeoutError`, `APIConnectionError`), so
`translate_error` and the retry policy read them exactly as before.
"""
from __future__ import annotations

import json
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiohttp
    import httpx2
    import openai

# As the SDK's pool: connections in all, and how long an idle one is kept (a server may close it soon after).
MAX_CONNECTIONS = 1000
KEEPALIVE_SECONDS = 5.0


def _status_classes() -> dict[int, type[openai.APIStatusError]]:
    import openai

    return {
        400: openai.BadRequestError, 401: openai.AuthenticationError, 403: openai.PermissionDeniedError,
        404: openai.NotFoundError, 409: openai.ConflictError, 422: openai.UnprocessableEntityError,
        429: openai.RateLimitError,
    }


def status_error(response: httpx2.Response) -> openai.APIStatusError:
    """The SDK's error for a read error response: class by status, "Error code: N - message", `body` the error object."""
    import openai

    message = f"Error code: {response.status_code}"
    text = response.text.strip()
    body: object = text
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        error = body.get("error", body) if isinstance(body, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
    data = body.get("error", body) if isinstance(body, dict) else body
    status = response.status_code
    cls = _status_classes().get(status) or (openai.InternalServerError if status >= 500 else openai.APIStatusError)
    return cls(message, response=response, body=data)


def transport_error(exc: BaseException, request: httpx2.Request) -> openai.APIError | None:
    """The SDK's error for a failed send or read (`APITimeoutError`, `APIConnectionError`), or None if `exc` is neither."""
    import aiohttp
    import openai

    # aiohttp's read and connect timeouts are also connection errors: the timeout is what happened.
    if isinstance(exc, TimeoutError):
        return openai.APITimeoutError(request=request)
    if isinstance(exc, (aiohttp.ClientError, ssl.SSLError, OSError)):
        return openai.APIConnectionError(request=request)
    return None


@contextmanager
def sdk_errors(request: httpx2.Request) -> Iterator[None]:
    """Raise a transport failure inside the block as the SDK's error for it (others pass unchanged)."""
    try:
        yield
    except Exception as exc:
        error = transport_error(exc, request)
        if error is None:
            raise
        raise error from exc


class StreamResponse:
    """The open event stream of one POST: its body read by `read()`, released by `aclose()`.

    Attributes:
        request: the request as the SDK's errors carry it.
    """

    def __init__(self, response: aiohttp.ClientResponse, request: httpx2.Request) -> None:
        self._response = response
        self.request = request

    async def read(self) -> bytes | None:
        """The next bytes of the body (None at its end); a broken or timed-out read raises as the SDK's stream does."""
        with sdk_errors(self.request):
            chunk = await self._response.content.readany()
        return chunk or None

    async def aclose(self) -> None:
        """Release the connection: back to the pool once the body was read to its end, closed otherwise."""
        self._response.release()


class StreamRequests:
    """POSTs of prepared bodies to one endpoint, each returning the open event-stream response.

    Args:
        url: the endpoint URL.
        headers: sent with every request (auth included).
        timeout_seconds: for connecting and for each read, as the SDK applies its timeout.
    """

    def __init__(self, url: str, headers: Mapping[str, str], timeout_seconds: float) -> None:
        self._url = url
        self._headers = dict(headers)
        self._timeout = timeout_seconds
        self._session: aiohttp.ClientSession | None = None
        self._request: httpx2.Request | None = None

    def _open(self) -> tuple[aiohttp.ClientSession, httpx2.Request]:
        """The session (made in the running loop, on first use) and the request object the errors carry."""
        if self._session is None or self._request is None:
            import aiohttp
            import httpx2

            tls: ssl.SSLContext | bool = httpx2.create_ssl_context() if self._url.startswith("https:") else True
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=tls, keepalive_timeout=KEEPALIVE_SECONDS),
                timeout=aiohttp.ClientTimeout(total=None, connect=self._timeout, sock_read=self._timeout),
                trust_env=True,  # HTTP(S)_PROXY and NO_PROXY, as the SDK's client reads them
            )
            self._request = httpx2.Request("POST", self._url, headers=self._headers)
        return self._session, self._request

    async def post(self, body: bytes) -> StreamResponse:
        import httpx2

        session, request = self._open()
        with sdk_errors(request):
            response = await session.post(self._url, data=body, headers=self._headers)
        if response.status < 400:
            return StreamResponse(response, request)
        try:
            with sdk_errors(request):
                content = await response.read()
        finally:
            response.release()
        raise status_error(httpx2.Response(
            response.status, headers=list(response.headers.items()), content=content, request=request
        ))

    async def close(self) -> None:
        """Close the pooled connections (idempotent)."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


__all__ = ["StreamRequests", "StreamResponse", "sdk_errors", "status_error", "transport_error"]
