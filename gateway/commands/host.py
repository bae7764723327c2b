"""The running gateway as immediate commands see it (`CommandHost`).

Owns `LaneHost`: the session lanes (busy, queued, stop), the agent pool
(`/status`), the session service (`/new`), the chat's notes (`/memory`) and
the per-chat commands, joined for the handlers of `gateway/commands/table.py`.
Knows nothing of platforms: the reply is sent by the caller.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from agent.memory import NotesStore
from agent.model_windows import ModelWindows
from gateway.approvals.commands import ApprovalDesk
from gateway.chats.forget import forget_notes
from gateway.commands.chat import ChatCommands
from gateway.commands.status import ActivePlugins, StatusInfo, WindowNote
from gateway.i18n import Phrase
from gateway.intake.queueing import Job, SessionLanes
from gateway.intake.routing import Route
from gateway.schedules.desk import ScheduleDesk
from gateway.sessions.hygiene import estimate_history_tokens
from gateway.sessions.service import SessionService


class LaneHost:
    """`CommandHost` over one run of the gateway's lanes.

    Args:
        lanes: the session lanes of this run.
        forget: marks a job the user stopped as done, so a restart does not run it again.
        sessions: the one owner of work on a session.
        notes_text: a chat's notes as text (None: notes are off).
        chats: `/model`, `/usage`, `/undo` (None: no chat store).
        windows: the learned model windows and the model answering now (for `/status`).
        approvals: `/approve` and `/deny` (None: no approvals here).
        notes: every chat's notes, for `/forget` (None: notes are off).
        admins: the bot admins of a platform (`platforms.<p>.admins`, live), for `/whoami` and `/forget`.
        plugins: the context engine and memory provider in use (for `/status`).
        schedules: `/schedules` and `/unschedule` (None: no scheduler).
    """

    def __init__(
        self, *, lanes: SessionLanes, forget: Callable[[Job | None], None], sessions: SessionService,
        notes_text: Callable[[str], str] | None = None, chats: ChatCommands | None = None,
        windows: ModelWindows | None = None, approvals: ApprovalDesk | None = None,
        notes: NotesStore | None = None, admins: Callable[[str], frozenset[str]] = lambda _platform: frozenset(),
        plugins: ActivePlugins | None = None, schedules: ScheduleDesk | None = None,
    ) -> None:
        self._lanes = lanes
        self._forget = forget
        self._sessions = sessions
        self._agents = sessions.agents
        self._notes_text = notes_text
        self._chats = chats
        self._windows = windows
        self._approvals = approvals
        self._notes = notes
        self._admins = admins
        self._plugins = plugins
        self._schedules = schedules

    @property
    def chats(self) -> ChatCommands | None:
        return self._chats

    @property
    def approvals(self) -> ApprovalDesk | None:
        return self._approvals

    @property
    def schedules(self) -> ScheduleDesk | None:
        return self._schedules

    def admins(self, platform: str) -> frozenset[str]:
        return self._admins(platform)

    async def forget(self, route: Route, user_id: str, text: str, *, admin: bool, language: str) -> Phrase | None:
        if self._notes is None:
            return None
        return await asyncio.to_thread(forget_notes, self._notes, route, user_id, text, admin=admin,
                                     language=language)

    def busy(self, route: Route) -> bool:
        return self._lanes.busy(route.key)

    def queued(self, route: Route) -> int:
        return self._lanes.queued(route.key)

    def stop_running(self, route: Route) -> bool:
        stopped = self._lanes.stop(route.key)
        self._forget(stopped)
        return stopped is not None

    async def new_session(self, route: Route) -> None:
        self._forget(self._lanes.stop(route.key))
        await self._sessions.reset(route)

    async def notes(self, route: Route) -> str | None:
        if self._notes_text is None:
            return None
        return await asyncio.to_thread(self._notes_text, route.chat_scope)

    async def status(self, route: Route) -> StatusInfo:
        agent = self._agents.peek(route)
        if agent is None:
            agent = await self._agents.get(route)
        engine = agent.engine
        reported = engine.state.last_prompt_tokens
        tokens = reported if reported > 0 else estimate_history_tokens(agent.history)
        return StatusInfo(
            session_key=route.key,
            messages=len(agent.history),
            tokens_used=tokens,
            tokens_source="reported" if reported > 0 else "estimate",
            threshold=engine.threshold_tokens,
            context_length=engine.context_length,
            compressions=engine.state.compression_count,
            busy=self._lanes.busy(route.key),
            queued=self._lanes.queued(route.key),
            blocked=engine.state.blocked_until > time.time(),
            prompt_source=agent.state.marks.prompt_source or "default",
            model=self._agents.model_of(route.key),
            window=self._window(),
            plugins=self._plugins,
        )

    def _window(self) -> WindowNote | None:
        windows = self._windows
        if windows is None:
            return None
        active, window = windows.active, windows.active_window()
        return WindowNote(fallback="" if active == windows.main else active.name,
                          learned=window if window < active.context_length else 0, configured=active.context_length)


__all__ = ["LaneHost"]
