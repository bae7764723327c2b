"""`Heartbeat`: one row per live replica in `chorus_replicas`, the liveness its journal rows and claims hang on.

A replica is alive while its row's `alive_until` is ahead (written every
third of `gateway.lease_seconds`) and, when it beats on a connection of its
own, while that connection's server process still exists: a replica killed
outright closes it, the server's process ends at once, and the others take
its work over on their next poll instead of waiting for the heartbeat to
lapse. The lapse still catches a replica whose machine vanished (its
connection may linger until TCP gives up). One row written per beat,
however many messages the replica holds.
"""
from __future__ import annotations

import threading

import psycopg
import structlog

from gateway.shared._schema import NOW_SQL, Connect

log = structlog.get_logger(__name__)

CONNECT_TIMEOUT_SECONDS = 5
_BEAT = f"""
INSERT INTO chorus_replicas (node, alive_until, backend) VALUES (%s, {NOW_SQL} + %s, %s)
ON CONFLICT (node) DO UPDATE SET alive_until = EXCLUDED.alive_until, backend = EXCLUDED.backend
"""
_BEAT_OWN = f"""
INSERT INTO chorus_replicas (node, alive_until, backend) VALUES (%s, {NOW_SQL} + %s, pg_backend_pid())
ON CONFLICT (node) DO UPDATE SET alive_until = EXCLUDED.alive_until, backend = EXCLUDED.backend
"""


class Heartbeat:
    """This replica's row in `chorus_replicas`.

    Args:
        connect: a pooled connection (autocommit), used when there is no `url`.
        node: this replica's id (the owner named on its journal rows and claims).
        lease_seconds: how long one beat keeps the replica alive.
        url: the store's URL: beat on a connection held for the replica's life, whose end marks it dead at once.
    """

    def __init__(self, connect: Connect, *, node: str, lease_seconds: float, url: str | None = None) -> None:
        self._connect = connect
        self._node = node
        self._lease = lease_seconds
        self._url = url
        self._own: psycopg.Connection[tuple[object, ...]] | None = None
        self._guard = threading.Lock()  # beats come from the lease loop's thread; the first and the end from others

    def beat(self) -> int:
        """Alive for another lease; returns 1 (the one row written)."""
        if self._url is None:
            with self._connect() as conn:
                return conn.execute(_BEAT, (self._node, self._lease, None)).rowcount
        with self._guard:
            own = self._own
            if own is None or own.closed or own.broken:
                own = self._own = psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)
            try:
                return own.execute(_BEAT_OWN, (self._node, self._lease)).rowcount
            except psycopg.Error:
                self._own = None  # the next beat reconnects (and names its new server process)
                own.close()
                raise

    def end(self) -> None:
        """Dead at once, on purpose (a clean stop): delete the row and end its rows' leases; then close."""
        try:
            with self._connect() as conn, conn.transaction():
                conn.execute("DELETE FROM chorus_replicas WHERE node = %s", (self._node,))
                conn.execute(
                    "UPDATE chorus_inbound SET lease_until = 0 WHERE owner = %s AND finished_at IS NULL", (self._node,)
                )
        except psycopg.Error as exc:  # its heartbeat lapses by itself within a lease
            log.warning("journal.heartbeat_end_failed", error=type(exc).__name__)
        with self._guard:
            own, self._own = self._own, None
            if own is not None:
                own.close()


__all__ = ["Heartbeat"]
