"""The last step when a small window leaves no room: leave the oldest turns out of the request.

Owns `drop_oldest`. After compression and cutting could not bring a request
under the model's window (a window of 2-4K tokens, where the system prompt and
the tool schemas take most of it), whole turns are dropped from the start of
the history, oldest first, until it fits. A turn is a person's message and
everything up to the next one, so a tool call never loses its result. The
newest turn (the one being answered) is always kept; a compression summary at
the start goes last. Pure; the caller persists the result and tells the user.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.messages import Message


@dataclass(frozen=True, slots=True)
class Dropped:
    kept: tuple[Message, ...]
    dropped: tuple[Message, ...]


def _turn_starts(history: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(history) if m.role == "user" and not m.compressed_summary]


def drop_oldest(history: Sequence[Message], *, fits: Callable[[Sequence[Message]], bool]) -> Dropped | None:
    """The history with its oldest turns left out until `fits` says it fits; None when nothing can go."""
    starts = _turn_starts(history)
    if len(starts) < 2:
        return None  # only the turn being answered: nothing older to leave out
    summary = [m for m in history[: starts[0]] if m.compressed_summary]
    candidates: list[tuple[Message, ...]] = [(*summary, *history[start:]) for start in starts[1:]]
    candidates.append(tuple(history[starts[-1]:]))  # the summary goes too, as the last resort
    for kept in candidates:
        if fits(kept) or kept is candidates[-1]:
            keep_ids = {id(m) for m in kept}
            dropped = tuple(m for m in history if id(m) not in keep_ids)
            return Dropped(kept=kept, dropped=dropped) if dropped else None
    return None


__all__ = ["Dropped", "drop_oldest"]
