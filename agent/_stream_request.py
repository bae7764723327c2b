"""The streaming chat-completion POST, sent straight through the SDK's HTTP client type, failing as the SDK fails.

Owns `StreamRequests`. The SDK's request path (options, header merging,
auth hooks, response wrapping) cost about a quarter of a streamed turn's
CPU; the hot call needs none of it: a prepared body, fixed headers (the SDK's
own `default_headers` plus the bearer key) and the open response. Failures
are the SDK's public exception types built the way it builds them
(`APIStatusError` subclasses by status with the same message and `body`,
`APITimeoutError`, `APIConnectionError`), so `translate_error` and the retry
policy read them exactly as before.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2
    import openai


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


class StreamRequests:
    """POSTs of prepared bodies to one endpoint, each returning the open event-stream response.

    Args:
        http: the client the requests go through (the SDK's default client type, shared with the SDK).
        url: the endpoint URL.
        headers: sent with every request (auth included).
    """

    def __init__(self, http: httpx2.AsyncClient, url: str, headers: Mapping[str, str]) -> None:
        self._http = http
        self._url = url
        self._headers = dict(headers)

    async def post(self, body: bytes) -> httpx2.Response:
        import ssl

        import anyio
        import httpx2
        import openai

        request = self._http.build_request("POST", self._url, content=body, headers=self._headers)
        try:
            response = await self._http.send(request, stream=True)
            if response.status_code < 400:
                return response
            try:
                await response.aread()
            finally:
                await response.aclose()
        except httpx2.TimeoutException as exc:
            raise openai.APITimeoutError(request=request) from exc
        except (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream) as exc:
            raise openai.APIConnectionError(request=request) from exc
        raise status_error(response)


__all__ = ["StreamRequests", "status_error"]
