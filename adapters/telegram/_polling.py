"""The long poll's own HTTP request: every getUpdates is timed, a hung one is cancelled, liveness is recorded.

Owns `PollingRequest`, the `HTTPXRequest` PTB's `Updater` polls through (the
bot's `get_updates_request`, used for nothing else). A getUpdates that has not
answered within the poll timeout plus `hang_grace` is cancelled and surfaces as
a `NetworkError`, so PTB's retry loop reports it and backs off (1 s, growing to
30 s) before polling again; a 200 marks the poll alive, anything else records
why not. Logs one line when a poll hangs.
"""
from __future__ import annotations

import asyncio

import structlog
from telegram.error import NetworkError
from telegram.request import HTTPXRequest, RequestData

from adapters.liveness import LivenessClock

log = structlog.get_logger(__name__)


class PollingRequest(HTTPXRequest):
    """`HTTPXRequest` for getUpdates that reports to `liveness` and cancels a poll hung past `hang_after` seconds."""

    def __init__(self, *, liveness: LivenessClock, hang_after: float, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self._liveness = liveness
        self._hang_after = hang_after

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: object = HTTPXRequest.DEFAULT_NONE,
        write_timeout: object = HTTPXRequest.DEFAULT_NONE,
        connect_timeout: object = HTTPXRequest.DEFAULT_NONE,
        pool_timeout: object = HTTPXRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        try:
            async with asyncio.timeout(self._hang_after):
                code, payload = await super().do_request(
                    url, method, request_data, read_timeout=read_timeout,  # type: ignore[arg-type]
                    write_timeout=write_timeout, connect_timeout=connect_timeout,  # type: ignore[arg-type]
                    pool_timeout=pool_timeout,  # type: ignore[arg-type]
                )
        except TimeoutError:
            problem = f"getUpdates did not answer within {self._hang_after:g} s"
            self._liveness.failed(problem)
            log.warning("telegram.poll_hung", seconds=self._hang_after)
            raise NetworkError(problem) from None
        except NetworkError as exc:
            self._liveness.failed(f"getUpdates failed: {type(exc).__name__}")
            raise
        if code == 200:
            self._liveness.ok()
        else:
            self._liveness.failed(f"getUpdates answered HTTP {code}")
        return code, payload


__all__ = ["PollingRequest"]
