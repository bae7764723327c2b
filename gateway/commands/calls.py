"""What a command's handler is given: the call, and the parts of the gateway it may reach.

Owns `CommandCall` (an immediate command: the message, its session's route and
the `CommandHost`) and `SessionCall` (a queued command, run on the session's
lane under its lock: the job, the session's agent and the `SessionJobs` that
run turns and compressions). Both hosts are Protocols, so the table in
`gateway/commands/builtin.py` imports nothing above the intake.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from adapters.base import InboundMessage
from gateway.commands.spec import Command
from gateway.i18n import Phrase
from gateway.intake.routing import Route

if TYPE_CHECKING:
    from agent.context.engine import CompressionResult
    from agent.session import SessionAgent
    from gateway.approvals.commands import ApprovalDesk
    from gateway.commands.chat import ChatCommands
    from gateway.commands.status import StatusInfo
    from gateway.intake.queueing import Job
    from gateway.schedules.desk import ScheduleDesk


class CommandHost(Protocol):
    """What an immediate command may reach in the running gateway."""

    @property
    def chats(self) -> ChatCommands | None:
        """`/model`, `/usage` and `/undo` (None: no chat store here)."""
        ...

    @property
    def approvals(self) -> ApprovalDesk | None:
        """`/approve` and `/deny` (None: no approvals in this gateway)."""
        ...

    @property
    def schedules(self) -> ScheduleDesk | None:
        """`/schedules` and `/unschedule` (None: no scheduler in this gateway)."""
        ...

    def admins(self, platform: str) -> frozenset[str]:
        """The bot admins of `platform` (`platforms.<p>.admins`)."""
        ...

    async def forget(self, route: Route, user_id: str, text: str, *, admin: bool, language: str) -> Phrase | None:
        """`/forget TEXT`: remove matching notes (a member only their own); None: notes are off."""
        ...

    def busy(self, route: Route) -> bool:
        """A job of this session is running."""
        ...

    def queued(self, route: Route) -> int:
        """Jobs of this session waiting behind the running one."""
        ...

    def stop_running(self, route: Route) -> bool:
        """Cancel the session's running job (it is not re-run after a restart); False: nothing ran."""
        ...

    async def new_session(self, route: Route) -> None:
        """Cancel the running job and end the session; the next message starts a fresh one."""
        ...

    async def status(self, route: Route) -> StatusInfo:
        ...

    async def notes(self, route: Route) -> str | None:
        """The chat's notes as `/memory` shows them ("": none yet; None: notes are turned off)."""
        ...


class SessionJobs(Protocol):
    """What a queued command may run on its session (the lock is held)."""

    async def turn(self, job: Job, agent: SessionAgent, *, retry: bool, lock_wait: float | None) -> None:
        ...

    async def compress(self, job: Job, agent: SessionAgent) -> CompressionResult:
        """Compress the history now (forced) and persist the result."""
        ...

    async def reply(self, job: Job, text: Phrase) -> None:
        """Record and send `text` as the job's answer (its journal entry is then done)."""
        ...


@dataclass(frozen=True, slots=True)
class CommandCall:
    command: Command
    message: InboundMessage
    route: Route
    host: CommandHost
    language: str = "en"  # of the answer (`gateway.i18n.language_for`)


@dataclass(frozen=True, slots=True)
class SessionCall:
    command: Command
    job: Job
    agent: SessionAgent
    jobs: SessionJobs
    lock_wait: float | None = None

    @property
    def language(self) -> str:
        return self.job.language


__all__ = ["CommandCall", "CommandHost", "SessionCall", "SessionJobs"]
