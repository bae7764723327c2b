"""Sessions: the work done on one session under its lock.

Owns the pool of live session agents (`agents`), one job's run — turn, record, `/compress`, hygiene, idle
compaction (`turns`), the safety net before the agent (`hygiene`), group commit of store appends (`appends`)
and the background review after a delivered turn (`review`).
Knows nothing of platforms: it reaches a chat only through `gateway.delivery`.
"""
