"""What replicas with separate homes share in PostgreSQL: the inbound journal and the outbox.

Owns `PostgresJournal` (accepted messages as rows, each leased to the
replica running it and taken over by another once the lease expires) and
`PostgresOutbox` (replies as rows; recording a reply finishes its inbound
row in the same transaction). Both borrow connections from the session
store's pool; the tables are created at open (`_schema.py`).
"""
from gateway.shared.journal import PostgresJournal
from gateway.shared.outbox import PostgresOutbox

__all__ = ["PostgresJournal", "PostgresOutbox"]
