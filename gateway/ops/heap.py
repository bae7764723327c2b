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
"""
from __future__ import annotations

import gc


def settle_heap() -> int:
    """Freeze the objects alive now out of the collector's way; returns how many were frozen."""
    gc.collect()  # what start left as garbage goes first: frozen, a cycle would never be freed
    gc.freeze()
    return gc.get_freeze_count()


__all__ = ["settle_heap"]
