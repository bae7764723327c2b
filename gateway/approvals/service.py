"""Tool approvals end to end: a turn's gate that asks and waits, and the answer `/approve` and the buttons give.

Owns `Approvals` (built once per gateway) and the per-turn `ApprovalGate`. A call
whose tool matches the chat's `ApprovalRule` is recorded in the `ApprovalStore`, a
prompt is posted in the chat (buttons where the adapter has them, `/approve ID` and
`/deny ID` everywhere), and the turn waits for the record to change: a yes runs the
call once, a no or `timeout_seconds` without an answer gives the model "not
approved". Waiting reads the store, so a yes given on another replica, or after a
restart (the replayed turn finds the same record by its call), is seen. Knows
nothing of platform SDKs: posting goes through `Poster`.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from adapters.base import ChatTarget
from agent.messages import ToolCall
from agent.tools.base import refused
from gateway.approvals.rules import ApprovalRule, approval_rule, approvers_text, may_answer
from gateway.approvals.store import Approval, ApprovalRequest, ApprovalStore
from gateway.config import ChorusConfig
from gateway.delivery.tool_progress import describe_call
from gateway.i18n import Phrase, say

log = structlog.get_logger(__name__)

POLL_SECONDS = 1.0  # how soon a yes given on another replica is seen; one indexed read per second per waiting call

NOT_APPROVED_TIMEOUT = "not approved: nobody allowed to answer said yes within {seconds:g} s; do not run it again unless asked"
NOT_APPROVED_DENIED = "not approved: {who} said no; do not run it again unless asked"
NOT_APPROVED_GONE = "not approved: the approval was answered or expired elsewhere; ask the user before trying again"
APPROVAL_FAILED = "not approved: the approval could not be recorded; try again later"


class Poster(Protocol):
    """Posts an approval prompt where the call was asked (with buttons when the platform has them)."""

    async def post_prompt(self, target: ChatTarget, text: Phrase, approval_id: str, language: str) -> None: ...

    async def post_text(self, target: ChatTarget, text: Phrase) -> None: ...


@dataclass(frozen=True, slots=True)
class Asker:
    """Who asked for the turn's tool calls, and where."""

    session_key: str
    chat_scope: str
    target: ChatTarget
    user_id: str
    user_name: str
    language: str = "en"  # of the prompt (`gateway.i18n.language_for`)


@dataclass(frozen=True, slots=True)
class Answer:
    """What `/approve` or `/deny` (typed or clicked) says back; `private` when it is for the sender alone."""

    text: Phrase
    private: bool = False
    approval: Approval | None = None


class Approvals:
    """The gateway's approvals: gates for turns, answers for commands and buttons.

    Args:
        store: where approvals live (shared by every replica with a shared backend).
        config: the running config (rules reload live).
        poster: posts prompts and notices.
        admins: the bot admins of a platform (`platforms.<p>.admins`).
        clock: epoch seconds (the store's clock too).
        sleep: waits between reads of the store (injected in tests).
    """

    def __init__(
        self,
        store: ApprovalStore,
        *,
        config: Callable[[], ChorusConfig],
        poster: Poster,
        admins: Callable[[str], frozenset[str]],
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._store = store
        self._config = config
        self.poster = poster
        self._admins = admins
        self._clock = clock
        self._sleep = sleep
        self._answered: dict[str, asyncio.Event] = {}  # approvals waited on here, woken by an answer given here

    async def start(self) -> None:
        await asyncio.to_thread(self._store.open)

    async def stop(self) -> None:
        await asyncio.to_thread(self._store.close)

    def gate(self, asker: Asker) -> ApprovalGate | None:
        """The turn's gate, or None when no tool needs approval in its chat."""
        rule = approval_rule(self._config(), asker.chat_scope)
        return ApprovalGate(self, rule, asker) if rule.required else None

    async def answer(self, approval_id: str, *, approve: bool, chat_scope: str, platform: str,
                     sender_id: str, sender_name: str, language: str) -> Answer:
        """Approve or deny `approval_id` for the sender, if they may; nothing changes otherwise (said in `language`)."""
        approval = await asyncio.to_thread(self._store.get, approval_id.strip())
        if approval is None or approval.chat != chat_scope:
            shown = approval_id.strip() or say(language, "approval.no_id")
            return Answer(say(language, "approval.no_such", id=shown), private=True)
        allowed = may_answer(approval.approvers, requester_id=approval.requester_id, sender_id=sender_id,
                             sender_is_admin=sender_id in self._admins(platform))
        if not allowed:
            log.info("approval.refused_answer", approval=approval.id, tool=approval.tool, sender=sender_id)
            return Answer(say(language, "approval.only", approvers=approvers_text(language, approval.approvers)),
                          private=True)
        settled = await asyncio.to_thread(self._store.settle, approval.id, "approved" if approve else "denied",
                                          by=sender_name)
        if settled is None:
            return Answer(say(language, "approval.settled", id=approval.id), private=True)
        log.info("approval.answered", approval=approval.id, tool=approval.tool, approved=approve, by=sender_id)
        waiter = self._answered.get(approval.id)
        if waiter is not None:
            waiter.set()
        said = say(language, "approval.approved" if approve else "approval.denied", who=sender_name, tool=approval.tool,
                   id=approval.id)
        return Answer(said, approval=settled)

    async def wait(self, approval: Approval, language: str) -> str | None:
        """Wait for `approval` to be answered: None runs the call (once), else the model's "not approved" text.

        A timeout is said in the chat in `language` (the asker's, as their turn had it).
        """
        waiter = self._answered.setdefault(approval.id, asyncio.Event())
        try:
            while True:
                current = await asyncio.to_thread(self._store.get, approval.id)
                if current is None:
                    return refused(NOT_APPROVED_GONE)
                if current.status == "approved":
                    used = await asyncio.to_thread(self._store.settle, approval.id, "used", only="approved")
                    return None if used is not None else refused(NOT_APPROVED_GONE)
                if current.status == "denied":
                    return refused(NOT_APPROVED_DENIED.format(who=current.decided_by or "someone"))
                if current.status != "pending":
                    return refused(NOT_APPROVED_GONE)
                left = current.expires_at - self._clock()
                if left <= 0:
                    return await self._expire(current, language)
                waiter.clear()
                await self._nap(waiter, min(POLL_SECONDS, left))
        finally:
            self._answered.pop(approval.id, None)

    async def _nap(self, waiter: asyncio.Event, seconds: float) -> None:
        """Sleep up to `seconds`, or until an answer given in this process wakes the waiter."""
        nap = asyncio.ensure_future(self._sleep(seconds))
        woken = asyncio.ensure_future(waiter.wait())
        try:
            await asyncio.wait({nap, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            nap.cancel()
            woken.cancel()

    async def _expire(self, approval: Approval, language: str) -> str | None:
        expired = await asyncio.to_thread(self._store.settle, approval.id, "expired")
        if expired is None:  # answered in the last moment: read it again
            return await self.wait(approval, language)
        log.info("approval.timed_out", approval=approval.id, tool=approval.tool)
        platform, _, chat_id = approval.chat.partition(":")
        target = ChatTarget(platform=platform, chat_id=chat_id, thread_id=approval.thread_id)
        await self.poster.post_text(target, say(language, "approval.timed_out", id=approval.id, tool=approval.tool))
        return refused(NOT_APPROVED_TIMEOUT.format(seconds=approval.expires_at - approval.created_at))

    async def request(self, rule: ApprovalRule, asker: Asker, call: ToolCall) -> str | None:
        shown = describe_call(call).removeprefix("🔧 ")
        request = ApprovalRequest(
            session_key=asker.session_key, chat=asker.chat_scope, thread_id=asker.target.thread_id,
            requester_id=asker.user_id, requester_name=asker.user_name, tool=call.name, arguments=shown,
            args_hash=call_hash(call), approvers=rule.approvers, timeout_seconds=rule.timeout_seconds,
        )
        approval, created = await asyncio.to_thread(self._store.request, request)
        if created:
            log.info("approval.requested", approval=approval.id, tool=call.name, rule=rule.source)
            text = say(asker.language, "approval.prompt", who=asker.user_name, call=shown, id=approval.id,
                       approvers=approvers_text(asker.language, rule.approvers))
            await self.poster.post_prompt(asker.target, text, approval.id, asker.language)
        else:  # a replayed turn (restart, takeover): the prompt is already in the chat
            log.info("approval.resumed", approval=approval.id, tool=call.name, status=approval.status)
        return await self.wait(approval, asker.language)


class ApprovalGate:
    """One turn's `ToolGate`: calls of tools that need approval wait for a person; others run at once."""

    def __init__(self, approvals: Approvals, rule: ApprovalRule, asker: Asker) -> None:
        self._approvals = approvals
        self._rule = rule
        self._asker = asker

    async def admit(self, call: ToolCall) -> str | None:
        if not self._rule.needs_approval(call.name):
            return None
        try:
            return await self._approvals.request(self._rule, self._asker, call)
        except Exception as exc:  # noqa: BLE001 - a failed approval is a refusal, never a run and never a crash
            log.warning("approval.failed", tool=call.name, error=type(exc).__name__)
            return refused(APPROVAL_FAILED)


def call_hash(call: ToolCall) -> str:
    """The same tool with the same arguments hashes alike, whatever their spacing (a replayed turn finds its approval)."""
    try:
        canonical = json.dumps(json.loads(call.arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except ValueError:
        canonical = call.arguments
    return hashlib.sha256(f"{call.name}\0{canonical}".encode()).hexdigest()[:32]


__all__ = ["Answer", "ApprovalGate", "Approvals", "Asker", "Poster", "call_hash"]
