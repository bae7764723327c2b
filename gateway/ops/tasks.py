"""`dump_tasks`: every asyncio task's stack, for an operator asking a running gateway what it waits on.

`chorus run` calls it on SIGUSR1 (`kill -USR1 <pid>`): a turn that never finishes shows where it waits
(a lock, a store call, a platform request) without stopping the process.
"""
from __future__ import annotations

import asyncio
import sys
from typing import TextIO

MAX_FRAMES = 12


def dump_tasks(stream: TextIO | None = None) -> int:
    """Write each pending task's name and stack to `stream` (stderr); returns how many."""
    out = stream or sys.stderr
    tasks = [task for task in asyncio.all_tasks() if not task.done()]
    print(f"chorus: {len(tasks)} tasks", file=out)
    for task in sorted(tasks, key=lambda t: t.get_name()):
        print(f"--- task {task.get_name()}", file=out)
        task.print_stack(limit=MAX_FRAMES, file=out)
    out.flush()
    return len(tasks)


__all__ = ["dump_tasks"]
