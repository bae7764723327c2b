"""Attachment downloads for every adapter: only from the platform's own origins, checked at every hop.

`FetchPolicy` says which origins a platform's files may come from (and which
get its credentials); `FileFetcher` downloads within it. `refusal` is the
public-address check, exported for `chorus doctor`-style callers and tests.
"""
from adapters.fetch._addresses import refusal
from adapters.fetch._fetcher import Fetched, FileFetcher
from adapters.fetch._policy import AllowedOrigin, FetchPolicy, Origin, parse_origin

__all__ = ["AllowedOrigin", "FetchPolicy", "Fetched", "FileFetcher", "Origin", "parse_origin", "refusal"]
