"""Wiring of the background review into the gateway: after a delivered turn, and a flush at shutdown.

Owns `ReviewHooks`: `after_turn` hands each delivered turn to the
`BackgroundReviewer` (it returns at once; the review runs in the background
and never blocks a reply), and `flush` runs the reviewer's last memory review
for each session that had turns in this process, bounded by a timeout, then
stops it. Knows nothing of platforms.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

import structlog

from agent.review import BackgroundReviewer
from agent.tools.base import ToolContext
from gateway.chats.participants import user_notes_scope
from gateway.chats.provenance import turn_origin
from gateway.sessions.turns import FinishedTurn

log = structlog.get_logger(__name__)


class ReviewHooks:
    """Post-turn and shutdown hooks around one `BackgroundReviewer`."""

    def __init__(self, reviewer: BackgroundReviewer, *, admins: Mapping[str, frozenset[str]] | None = None) -> None:
        self.reviewer = reviewer
        self._admins = admins or {}
        self._sessions: dict[str, tuple[ToolContext, FinishedTurn]] = {}

    def follow(self, admins: Mapping[str, frozenset[str]]) -> None:
        """`platforms.*.admins` changed: whose words count as trusted in the next review."""
        self._admins = admins

    async def after_turn(self, turn: FinishedTurn) -> None:
        # The review reads the turn again: what it stores has the turn's provenance.
        context = ToolContext(
            chat_id=turn.job.route.chat_scope, session_id=turn.agent.session_id, user_id=turn.job.message.user_id,
            untrusted=turn_origin(turn.job.message, self._admins, turn.new_messages),
            user_notes=user_notes_scope(turn.job.route, turn.job.message.user_id),
        )
        self._sessions[context.session_id] = (context, turn)
        # No copy here: `after_turn` returns at once and copies the history itself when it starts a review.
        decision = self.reviewer.after_turn(context, turn.agent.history, new_messages=turn.new_messages)
        if decision.started:
            log.info("review.started", reason=decision.reason)

    async def flush(self, *, timeout: float) -> None:
        """Last memory reviews before exit (each session once), then stop the reviewer."""

        async def flush_all() -> None:
            for context, turn in list(self._sessions.values()):
                decision = await self.reviewer.flush(context, list(turn.agent.history))
                if decision.started:
                    log.info("review.flushed", session_id=context.session_id, reason=decision.reason)

        with contextlib.suppress(asyncio.TimeoutError):
            async with asyncio.timeout(timeout):
                await flush_all()
        await self.reviewer.stop(timeout=1.0)


__all__ = ["ReviewHooks"]
