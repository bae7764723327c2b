"""`PostgresOutbox`: the `Outbox` as rows every replica shares; recording a reply finishes its inbound message.

`put` of a reply that answers a journal entry (`OutboundItem.answers`)
inserts the reply and finishes that entry in one transaction, so there is
no moment where a replica could die with the reply recorded but the message
still due for a re-run (which would answer it twice), nor the reverse. The
entry is unique per reply: a second `put` for it (a replica that lost its
lease re-ran the turn) returns the first reply's id, which its sender then
fails to claim. An item is claimed by a lease; a sender that dies before
`ack` leaves it to whichever replica claims it once the lease or the
sender's heartbeat (`chorus_replicas`, kept by its journal) ran out.
"""
from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

import structlog

from gateway.coord.base import OutboundItem, PendingOutbound, check_ttl
from gateway.shared._schema import ALIVE_SQL, NOW_SQL, Connect

log = structlog.get_logger(__name__)

_PUT = f"""
INSERT INTO chorus_outbox (id, answers, item, created_at) VALUES (%s, %s, %s, {NOW_SQL})
ON CONFLICT (answers) DO NOTHING RETURNING id
"""
_FINISH = f"UPDATE chorus_inbound SET finished_at = {NOW_SQL} WHERE entry = %s AND finished_at IS NULL"
_CLAIM = f"""
UPDATE chorus_outbox SET owner = %(owner)s, lease_until = {NOW_SQL} + %(ttl)s, attempts = attempts + 1
WHERE id = %(id)s AND acked_at IS NULL
  AND (owner IS NULL OR owner = %(owner)s OR lease_until < {NOW_SQL}
       OR (owner LIKE '%%:' || %(id)s AND left(owner, -(length(%(id)s) + 1)) NOT IN ({ALIVE_SQL})))
RETURNING id
"""
"""A claim is free once its lease ran out, or at once when its sender (`<node>:<item id>`, as `Delivery` names
it) has no current heartbeat: the replica died."""
_PENDING = f"""
SELECT id, item, attempts FROM chorus_outbox
WHERE acked_at IS NULL AND created_at <= {NOW_SQL} - %s ORDER BY created_at LIMIT %s
"""
PENDING_LIMIT = 500  # per resend round: the rest waits for the next


class PostgresOutbox:
    """`Outbox` on PostgreSQL rows (the tables are created by `PostgresJournal.open`).

    Args:
        connect: a pooled connection (autocommit), normally the session store's `connection`.
    """

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        # Acknowledgements on a thread of their own: one queued behind a busy default executor widens the one
        # window where a sender that dies has sent a reply but not acknowledged it (docs/design.md §2.5, window 5).
        self._acks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="outbox-ack")


    def _put(self, item: OutboundItem) -> str:
        item_id = uuid.uuid4().hex
        with self._connect() as conn, conn.transaction():
            row = conn.execute(_PUT, (item_id, item.answers, item.to_json())).fetchone()
            if item.answers is not None:
                conn.execute(_FINISH, (item.answers,))
                if row is None:  # this entry's reply was recorded already
                    first = conn.execute("SELECT id FROM chorus_outbox WHERE answers = %s", (item.answers,)).fetchone()
                    log.warning("outbox.reply_recorded_already", answers=item.answers)
                    return str(first["id"]) if first else item_id
        return item_id

    async def put(self, item: OutboundItem) -> str:
        return await asyncio.to_thread(self._put, item)

    def _ack(self, item_id: str) -> None:
        with self._connect() as conn, conn.transaction():
            # Seen by every replica once committed, without waiting for the WAL flush: the ack closes the window
            # where a dead sender's reply is sent again, so it must land soonest. Only a database crash loses it
            # (the reply is then sent again).
            conn.execute("SET LOCAL synchronous_commit TO OFF")
            conn.execute(f"UPDATE chorus_outbox SET acked_at = {NOW_SQL} WHERE id = %s AND acked_at IS NULL", (item_id,))

    async def ack(self, item_id: str) -> None:
        await asyncio.get_running_loop().run_in_executor(self._acks, self._ack, item_id)

    def _pending(self, older_than: float) -> list[PendingOutbound]:
        with self._connect() as conn:
            rows = conn.execute(_PENDING, (older_than, PENDING_LIMIT)).fetchall()
        found: list[PendingOutbound] = []
        for row in rows:
            try:
                item = OutboundItem.from_json(row["item"])
            except ValueError as exc:  # kept for an operator to inspect; only skipped here
                log.warning("outbox.bad_item", item_id=row["id"], error=str(exc))
                continue
            found.append(PendingOutbound(id=row["id"], item=item, attempts=int(row["attempts"])))
        return found

    async def pending(self, *, older_than: float = 0.0) -> list[PendingOutbound]:
        return await asyncio.to_thread(self._pending, older_than)

    def _claim(self, item_id: str, owner: str, ttl: float) -> bool:
        with self._connect() as conn:
            return conn.execute(_CLAIM, {"id": item_id, "owner": owner, "ttl": ttl}).fetchone() is not None

    async def claim(self, item_id: str, *, owner: str, ttl: float) -> bool:
        check_ttl(ttl, "Outbox.claim")
        return await asyncio.to_thread(self._claim, item_id, owner, ttl)

    def backlog(self) -> int:
        """Replies recorded and not yet acknowledged."""
        with self._connect() as conn:
            row = conn.execute("SELECT count(*) AS n FROM chorus_outbox WHERE acked_at IS NULL").fetchone()
        return int(row["n"]) if row else 0


__all__ = ["PostgresOutbox"]
