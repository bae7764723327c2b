"""The daemon's heap after start: what was built to run lives as long as the process.

Owns `settle_heap`. The cyclic garbage collector's full collections walk every
tracked object; a started gateway holds some 190,000 of them (modules,
classes, pydantic schemas, the tokenizer, the parts) that only die with the
process, so each full collection cost a few hundred milliseconds of CPU on the
loop, falling now here now there, and grew with them. `gc.freeze()` moves what
exists at the end of start into the permanent generation: collections walk only
what was made since (chats, agents, messages), and nothing frozen is lost,
only no longer searched for cycles. Called by `chorus run` once the gateway is
up (not by `Gateway.start`: a test process starts and drops many gateways).

It also spaces the collections out (`GC_THRESHOLDS`). With the default
(700, 10, 10) a busy gateway ran a young collection every few messages and a
full one every few thousand (each walking every history still held), 35-55 us
of collector CPU a message at 100 chats; at (10000, 10, 10) it was 4-7 us in
the same runs (bench/gateway.py, 2,000 messages, collector time read from
`gc.callbacks`). The cost: cyclic garbage waits longer to be freed (a young
collection per 10,000 net allocations, a full one at most every million).
"""
from __future__ import annotations

import gc

GC_THRESHOLDS = (10_000, 10, 10)


def settle_heap() -> int:
    """Freeze the objects alive now out of the collector's way and space its collections; returns how many were frozen."""
    gc.collect()  # what start left as garbage goes first: frozen, a cycle would never be freed
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return gc.get_freeze_count()


__all__ = ["GC_THRESHOLDS", "settle_heap"]
