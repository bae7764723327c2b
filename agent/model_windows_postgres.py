"""Learned model windows in PostgreSQL: one `model_windows` table shared by every replica on the store.

Owns `PostgresWindowStore` (a `WindowStore`). A window is only ever lowered, so a
save keeps the smaller of what is stored and what was learned: two replicas learning
the same model at once end with the tighter window. Loading happens once per process
and saving only after an overflow, so each call opens its own short connection
rather than holding a pool. An unreachable database loads as nothing learned yet,
like an unreadable file, so the gateway still starts with the configured windows.
"""
from __future__ import annotations

import psycopg
import structlog

from agent.model_windows import LearnedWindow
from agent.store.postgres import redact_url

log = structlog.get_logger(__name__)

CONNECT_TIMEOUT_SECONDS = 5
_SAVE = """
INSERT INTO model_windows (key, tokens, stated, learned_at) VALUES (%s, %s, %s, %s)
ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, stated = excluded.stated, learned_at = excluded.learned_at
WHERE excluded.tokens < model_windows.tokens
"""


class PostgresWindowStore:
    """`WindowStore` over the `model_windows` table (created by the session store's migrations).

    Args:
        url: the `store.url` the session store uses.
    """

    def __init__(self, url: str) -> None:
        self.url = url

    @property
    def location(self) -> str:
        return f"{redact_url(self.url)} (table model_windows)"

    def load(self) -> dict[str, LearnedWindow]:
        try:
            with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
                rows = conn.execute("SELECT key, tokens, stated, learned_at FROM model_windows").fetchall()
        except psycopg.Error as exc:
            log.warning("model.windows_unreadable", store=redact_url(self.url), error=type(exc).__name__)
            return {}
        return {str(key): LearnedWindow(int(tokens), bool(stated), float(at)) for key, tokens, stated, at in rows}

    def save(self, key: str, window: LearnedWindow) -> None:
        """Store `window` unless a smaller one is stored already.

        Raises:
            OSError: the database could not be written (`ModelWindows.learn` logs it and carries on).
        """
        try:
            with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
                conn.execute(_SAVE, (key, window.tokens, window.stated, window.learned_at))
        except psycopg.Error as exc:
            raise OSError(f"cannot save the learned window of {key} in {redact_url(self.url)}") from exc


__all__ = ["PostgresWindowStore"]
