"""What the schedule tests share: a clock the test moves."""
from __future__ import annotations


class Clock:
    """Epoch seconds that change only when the test sets `now`."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
