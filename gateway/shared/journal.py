"""`PostgresJournal`: the inbound journal as rows every replica shares, each leased to the replica running it.

A replica records an accepted message as a row it owns with a first lease,
keeps all its rows with one heartbeat row of its own (`renew`: one row
written per replica, however many messages it runs; `heartbeat.py`), and
finishes a row when the reply is recorded (`PostgresOutbox.put` does that in
the same transaction) or the chat was told of a failure (`done`). A replica
that dies is dead at once (its heartbeat connection ends with it) or when
its heartbeat lapses (its machine vanished); any replica then takes its rows
over (`take_expired`: `FOR UPDATE SKIP LOCKED`, so two never take the same
row) and re-runs the messages. A replica that stops cleanly ends its
heartbeat at once. The row's own lease only counts for an owner with no
heartbeat row at all (a replica of an earlier version, renewing rows). The unique `dedup_key` makes recording idempotent:
a platform redelivering a message another replica recorded (live or
finished within a day) records nothing (`DuplicateDelivery`). A row keeps the
message's trace context (`traceparent`, W3C) in a column of its own, so the
replica that takes it over continues the trace of the one that accepted it.
"""
from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psycopg
import structlog

from adapters.base import InboundMessage
from gateway.intake.journals import DuplicateDelivery, JournalBacklog, TakenOver
from gateway.shared._codec import decode_message, encode_message
from gateway.shared._schema import ALIVE_SQL, NOW_SQL, Connect, ensure_tables, prune_finished
from gateway.shared.heartbeat import Heartbeat

log = structlog.get_logger(__name__)

_INSERT = f"""
INSERT INTO chorus_inbound (entry, dedup_key, message, traceparent, owner, lease_until, created_at)
SELECT u.entry, u.dedup_key, u.message, u.traceparent, %(owner)s, {NOW_SQL} + %(lease)s, {NOW_SQL}
FROM unnest(%(entry)s::text[], %(dedup_key)s::text[], %(message)s::text[], %(traceparent)s::text[])
    AS u(entry, dedup_key, message, traceparent)
ON CONFLICT (dedup_key) DO NOTHING
RETURNING entry
"""
_TAKE = f"""
UPDATE chorus_inbound SET owner = %(owner)s, lease_until = {NOW_SQL} + %(lease)s, takeovers = takeovers + 1
WHERE entry IN (
    SELECT entry FROM chorus_inbound WHERE finished_at IS NULL AND owner NOT IN ({ALIVE_SQL})
    AND (lease_until < {NOW_SQL} OR owner IN (SELECT node FROM chorus_replicas))
    ORDER BY created_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
RETURNING entry, message, traceparent, takeovers, created_at
"""
_BACKLOG = f"""
SELECT count(*) FILTER (WHERE owner IN ({ALIVE_SQL})
                        OR (lease_until >= {NOW_SQL} AND owner NOT IN (SELECT node FROM chorus_replicas))) AS claimed,
       count(*) FILTER (WHERE owner NOT IN ({ALIVE_SQL})
                        AND (lease_until < {NOW_SQL} OR owner IN (SELECT node FROM chorus_replicas))) AS expired
FROM chorus_inbound WHERE finished_at IS NULL
"""


@dataclass(frozen=True, slots=True)
class _Row:
    entry: str
    message: str
    traceparent: str | None
    takeovers: int
    created_at: float


class PostgresJournal:
    """`SharedJournal` on PostgreSQL rows.

    Args:
        connect: a pooled connection (autocommit), normally the session store's `connection`.
        node: this process's id (the owner of the rows it records or takes over).
        lease_seconds: how long a row stays this replica's without renewal (`gateway.lease_seconds`).
        url: the store's URL: the heartbeat holds a connection of its own, so a killed replica is dead at once.
    """

    def __init__(self, connect: Connect, *, node: str, lease_seconds: float, url: str | None = None) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"PostgresJournal: lease_seconds must be > 0, got {lease_seconds}")
        self._connect = connect
        self.node = node
        self.lease_seconds = lease_seconds
        self._heartbeat = Heartbeat(connect, node=node, lease_seconds=lease_seconds, url=url)
        self._finisher: ThreadPoolExecutor | None = None

    def open(self) -> None:
        """Create the tables if this database has none yet (the session store must be open)."""
        if self._finisher is None:
            ensure_tables(self._connect)
            self.renew()  # alive from the start: the first lease of its rows is never all that keeps them
            self._finisher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal-done")

    def close(self) -> None:
        """Apply the `done`s still queued; end the heartbeat, so another replica takes the unfinished rows at once."""
        finisher, self._finisher = self._finisher, None
        if finisher is not None:
            finisher.shutdown(wait=True)
            self._heartbeat.end()

    def record(self, message: InboundMessage) -> str:
        outcome = self.record_many([message])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def record_many(self, messages: list[InboundMessage]) -> list[str | Exception]:
        """Record each message in one statement; per message its entry, `DuplicateDelivery`, or the error."""
        outcomes: list[str | Exception] = []
        rows: dict[str, tuple[str, str, str | None]] = {}  # entry -> (dedup key, JSON, trace context)
        keys: set[str] = set()
        for message in messages:
            key = message.dedup_key
            if key in keys:  # the same delivery twice in one burst: only the first is recorded
                outcomes.append(DuplicateDelivery(key))
                continue
            entry = uuid.uuid4().hex
            try:
                rows[entry] = (key, encode_message(message), message.traceparent)
            except (ValueError, TypeError, RecursionError) as exc:
                outcomes.append(exc)
                continue
            keys.add(key)
            outcomes.append(entry)
        if not rows:
            return outcomes
        params = {
            "owner": self.node, "lease": self.lease_seconds, "entry": list(rows),
            "dedup_key": [key for key, _, _ in rows.values()], "message": [raw for _, raw, _ in rows.values()],
            "traceparent": [trace for _, _, trace in rows.values()],
        }
        try:
            with self._connect() as conn:
                stored = {row["entry"] for row in conn.execute(_INSERT, params).fetchall()}
        except psycopg.Error as exc:
            return [exc if isinstance(o, str) else o for o in outcomes]
        return [o if not isinstance(o, str) or o in stored else DuplicateDelivery(rows[o][0]) for o in outcomes]

    def done(self, entry: str) -> None:
        """Finish a row (kept a day as a tombstone, so a redelivery is recognised), off the caller's thread.

        Callers are on the event loop; a lost `done` (the process dies first) only makes another
        replica take the row over, where a reply already recorded finished it anyway.
        """
        if self._finisher is None:
            self._finish(entry)
        else:
            self._finisher.submit(self._finish, entry)

    def _finish(self, entry: str) -> None:
        try:
            with self._connect() as conn:
                conn.execute(
                    f"UPDATE chorus_inbound SET finished_at = {NOW_SQL} WHERE entry = %s AND finished_at IS NULL",
                    (entry,),
                )
        except psycopg.Error as exc:  # the row is taken over and re-run: a reply already recorded is not doubled
            log.warning("journal.done_failed", entry=entry, error=type(exc).__name__)

    def recover(self) -> list[tuple[str, InboundMessage]]:
        """At start: every row whose lease has run out (a replica died, or this home's previous process)."""
        return [(taken.entry, taken.message) for taken in self.take_expired(limit=10_000)]

    def renew(self) -> int:
        """The heartbeat: this replica is alive for another lease, and with it every row it owns (one row written)."""
        return self._heartbeat.beat()

    def take_expired(self, *, limit: int) -> list[TakenOver]:
        """Take over rows whose lease ran out (oldest first); an unreadable row is finished and logged."""
        with self._connect() as conn:
            found = [_Row(**row) for row in conn.execute(
                _TAKE, {"owner": self.node, "lease": self.lease_seconds, "limit": limit}
            ).fetchall()]
        taken: list[TakenOver] = []
        for row in sorted(found, key=lambda r: r.created_at):
            try:
                message = decode_message(row.message, row.traceparent)
            except (ValueError, TypeError, KeyError, RecursionError) as exc:
                log.error("journal.unreadable", entry=row.entry, error=type(exc).__name__)
                self.done(row.entry)
                continue
            taken.append(TakenOver(row.entry, message, row.takeovers))
        if taken:
            log.info("journal.taken_over", entries=len(taken))
        return taken

    def note_draft(self, entry: str, message_id: str) -> None:
        """Remember the streamed draft of this entry's reply, so a replica taking it over edits that draft.

        Queued on the journal's own thread, as `done` is: the window in which a replica dies with its draft
        sent but not noted (a taker then sends a second message) is one `UPDATE` behind nothing else.
        """
        if self._finisher is None:
            self._note_draft(entry, message_id)
        else:
            self._finisher.submit(self._note_draft, entry, message_id)

    def _note_draft(self, entry: str, message_id: str) -> None:
        try:
            with self._connect() as conn, conn.transaction():
                conn.execute("SET LOCAL synchronous_commit TO OFF")  # visible at once; only a database crash loses it
                conn.execute("UPDATE chorus_inbound SET draft = %s WHERE entry = %s", (message_id, entry))
        except psycopg.Error as exc:  # a taker then sends a new message beside the draft, as before drafts were noted
            log.warning("journal.draft_note_failed", entry=entry, error=type(exc).__name__)

    def draft_of(self, entry: str) -> str | None:
        """The platform id of the draft noted for this entry, if any."""
        with self._connect() as conn:
            row = conn.execute("SELECT draft FROM chorus_inbound WHERE entry = %s", (entry,)).fetchone()
        return str(row["draft"]) if row and row["draft"] is not None else None

    def known(self, dedup_key: str) -> bool:
        """Whether some replica recorded this delivery (live, or finished within the last day)."""
        with self._connect() as conn:
            row = conn.execute("SELECT 1 AS found FROM chorus_inbound WHERE dedup_key = %s", (dedup_key,)).fetchone()
        return row is not None

    def backlog(self) -> JournalBacklog:
        """Unfinished rows: leased by a live replica, and past their lease (waiting to be taken over)."""
        with self._connect() as conn:
            row = conn.execute(_BACKLOG).fetchone()
        claimed, expired = (int(row["claimed"]), int(row["expired"])) if row else (0, 0)
        return JournalBacklog(pending=claimed + expired, claimed=claimed, expired=expired)

    def prune(self) -> int:
        return prune_finished(self._connect)

    def pending_count(self) -> int:
        return self.backlog().pending


__all__ = ["PostgresJournal"]
