"""Reading the operator API's query parameters: one wording for a bad `limit` on every list route.

Owns `query_limit`. Knows nothing of the routes that use it.
"""
from __future__ import annotations

from aiohttp import web

BAD_LIMIT_TEXT = "limit: got {given!r}; expected a whole number up to {maximum}"


class BadQuery(Exception):
    """A query parameter that cannot be read; `response` is the 400 to answer with."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.response = web.json_response({"error": text}, status=400)


def query_limit(request: web.Request, *, default: int, maximum: int) -> int:
    """`?limit=N`, at most `maximum` (`default` when absent).

    Raises:
        BadQuery: not a whole number.
    """
    given = request.query.get("limit")
    if given is None:
        return default
    try:
        return min(int(given), maximum)
    except ValueError:
        raise BadQuery(BAD_LIMIT_TEXT.format(given=given, maximum=maximum)) from None


__all__ = ["BAD_LIMIT_TEXT", "BadQuery", "query_limit"]
