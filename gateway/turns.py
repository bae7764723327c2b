"""Running one session job: a turn, a context-only record, or a `/compress`, under the session lock.

Owns `TurnRunner`. For a turn: hold the session lock (renewed) for the whole
job, get the session's agent, run hygiene at most once (SPEC §2.3), run the
conversation loop with typing, streaming and progress notices, persist the
messages (append, or replace/rotate after a compression), save the agent
state, record the reply in the outbox and send it, then hand the turn to the
post-turn hook (background review). A failed turn tells the chat briefly,
without internals. Logs one canonical `turn.finished` line. Knows the
platforms only through `Delivery`.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from structlog.contextvars import bind_contextvars

from adapters.base import SentMessage
from agent.context.engine import CompressionResult
from agent.errors import ModelAuthError, ModelNotConfigured, RateLimited
from agent.memory.providers import MemoryManager
from agent.messages import Message, user
from agent.session import SessionAgent
from agent.store import SessionStore
from agent.tools.base import ToolContext
from gateway.agents import AgentPool
from gateway.appends import AppendBatcher
from gateway.coord.base import OutboundItem, SessionLock
from gateway.coord.hold import LockBusy, hold
from gateway.delivery import Delivery, StreamPreview, typing_while
from gateway.hygiene import STALLED_KEY, check_hygiene
from gateway.journal import InboundJournal
from gateway.logs import bind_message_context
from gateway.notices import NoticeBoard
from gateway.provenance import writer_standing
from gateway.queueing import Job

log = structlog.get_logger(__name__)

LOCK_TTL = 30.0
LOCK_WAIT = 600.0
FAILED_TEXT = "Sorry, something went wrong while answering. Please try again in a moment."
BUSY_TEXT = "This conversation is busy in another worker; please send your message again shortly."
AUTH_TEXT = "I can't reach my model right now (the operator needs to check its credentials)."
RATE_TEXT = "The model is rate-limiting me right now; please try again in a minute."
TOO_LONG_TEXT = "That message is too long for me ({n:,} characters; the limit is {limit:,}). Please shorten it."
WARNED_KEY = "warned"
LAST_TURN_KEY = "last_turn_at"


@dataclass(frozen=True, slots=True)
class TurnSettings:
    in_place: bool
    progress_notices: bool
    context_length: int
    hard_message_limit: int
    max_message_chars: int
    model_missing_text: str | None  # set when no model is configured
    admins: Mapping[str, frozenset[str]] = field(default_factory=dict)  # platforms.<p>.admins: trusted note writers in groups


@dataclass(frozen=True, slots=True)
class FinishedTurn:
    """What the post-turn hook receives."""

    job: Job
    agent: SessionAgent
    reply: str
    new_messages: tuple[Message, ...]


PostTurnHook = Callable[[FinishedTurn], Awaitable[None]]


class _Notices:
    """`NoticeChannel` over `Delivery` for one chat."""

    def __init__(self, delivery: Delivery, job: Job) -> None:
        self._delivery = delivery
        self._target = job.route.target

    async def send_notice(self, text: str) -> object:
        return await self._delivery.send_text(self._target, text)

    async def edit_notice(self, handle: object, text: str) -> None:
        if isinstance(handle, SentMessage):
            await self._delivery.edit_text(handle, text)
        else:
            await self._delivery.send_text(self._target, text)


def user_line(job: Job) -> Message:
    """The user message as the model sees it: prefixed with the sender's name in shared sessions."""
    text = job.message.text
    if job.route.shared:
        return user(f"{job.message.user_name}: {text}")
    return user(text)


class TurnRunner:
    """Executes jobs from the session lanes.

    Args:
        agents: the live agent pool.
        store: the session store.
        lock: the cross-process session lock.
        delivery: outgoing messages.
        journal: the inbound journal (entries are removed when a job is done).
        settings: turn limits and switches.
        post_turn: called after a reply was delivered (background review); never blocks the reply.
        memory: the external memory provider manager (prefetch before a turn, sync after it), if any.
    """

    def __init__(
        self,
        *,
        agents: AgentPool,
        store: SessionStore,
        lock: SessionLock,
        delivery: Delivery,
        journal: InboundJournal,
        settings: TurnSettings,
        post_turn: PostTurnHook | None = None,
        memory: MemoryManager | None = None,
    ) -> None:
        self._agents = agents
        self._store = store
        self._appends = AppendBatcher(store)
        self._lock = lock
        self._delivery = delivery
        self._journal = journal
        self.settings = settings
        self._post_turn = post_turn
        self._memory = memory
        self._syncs: set[asyncio.Task[bool]] = set()
        self._journal_done: set[str] = set()  # entries already removed by `_deliver` (saves a failing unlink)
        self.turns_run = 0
        self.hygiene_runs = 0

    async def run(self, job: Job) -> None:
        """Run a job; cancellation (stop, interrupt, shutdown) leaves its journal entry for a re-run."""
        bind_message_context(platform=job.message.platform, chat_id=job.message.chat_id, session_key=job.route.key)
        waiting_since = time.monotonic()
        try:
            async with hold(self._lock, job.route.key, ttl=LOCK_TTL, wait=LOCK_WAIT) as held:
                bind_contextvars(lock_wait_ms=round((time.monotonic() - waiting_since) * 1000, 2))
                agent = await self._agents.get(job.route)
                if job.kind == "record":
                    await self._record(job, agent)
                elif job.kind == "compress":
                    await self._compress(job, agent)
                else:
                    await self._turn(job, agent)
                if held.lost:
                    # Renewal failed (e.g. a long Redis outage): another process may have run this session.
                    log.warning("turn.lock_lost", kind=job.kind)
        except asyncio.CancelledError:
            log.info("turn.cancelled", kind=job.kind)
            self._journal_done.discard(job.journal_entry or "")
            raise
        except LockBusy:
            log.warning("turn.lock_busy", kind=job.kind)
            await self._tell(job, BUSY_TEXT)
        except Exception as exc:  # noqa: BLE001 - the task boundary: log, tell the chat briefly
            log.exception("turn.failed", kind=job.kind, error=type(exc).__name__)
            await self._tell(job, self._failure_text(exc))
        if job.journal_entry is not None and job.journal_entry in self._journal_done:
            self._journal_done.discard(job.journal_entry)
        else:
            self._finish_journal(job)

    def _finish_journal(self, job: Job) -> None:
        if job.journal_entry is not None:
            self._journal.done(job.journal_entry)

    def _failure_text(self, exc: Exception) -> str:
        if isinstance(exc, ModelNotConfigured) and self.settings.model_missing_text:
            return self.settings.model_missing_text
        if isinstance(exc, ModelAuthError):
            return AUTH_TEXT
        if isinstance(exc, RateLimited):
            return RATE_TEXT
        return FAILED_TEXT

    async def _tell(self, job: Job, text: str) -> None:
        if job.kind != "record":
            await self._delivery.send_text(job.route.target, text)

    async def _record(self, job: Job, agent: SessionAgent) -> None:
        message = user_line(job)
        await self._appends.append(agent.session_id, [message])
        agent.append_context([message])

    async def _persist(self, agent: SessionAgent, *, compressed: bool, new: Sequence[Message], job: Job) -> None:
        if not compressed:
            await self._appends.append(agent.session_id, new)
        elif self.settings.in_place:
            await asyncio.to_thread(self._store.replace_active, agent.session_id, list(agent.history))
        else:
            child = await asyncio.to_thread(self._store.rotate, agent.session_id, list(agent.history))
            agent.session_id = child.id
        await self._agents.save(job.route, agent)

    def _board(self, job: Job, agent: SessionAgent, *, progress: bool) -> NoticeBoard:
        warned = agent.state.extra.setdefault(WARNED_KEY, [])
        if not isinstance(warned, list):
            warned = agent.state.extra[WARNED_KEY] = []
        return NoticeBoard(_Notices(self._delivery, job), progress=progress, warned=warned)

    async def _hygiene(self, job: Job, agent: SessionAgent, board: NoticeBoard) -> CompressionResult | None:
        stalled = agent.state.extra.get(STALLED_KEY)
        decision = check_hygiene(
            agent.history,
            last_prompt_tokens=agent.engine.state.last_prompt_tokens,
            context_length=self.settings.context_length,
            hard_message_limit=self.settings.hard_message_limit,
            stalled_at=stalled if isinstance(stalled, int) else None,
        )
        if not decision.compress:
            return None
        self.hygiene_runs += 1
        before = len(agent.history)
        result = await agent.compress(trigger="hygiene", on_event=board)
        progressed = result.changed and (len(agent.history) < before or result.tokens_after < result.tokens_before)
        if progressed:
            agent.state.extra.pop(STALLED_KEY, None)
            await self._persist(agent, compressed=True, new=(), job=job)
        else:
            agent.state.extra[STALLED_KEY] = len(agent.history)
        log.info(
            "hygiene.ran", reason=decision.reason, outcome=result.outcome, messages_before=before,
            messages_after=len(agent.history), tokens_before=result.tokens_before, tokens_after=result.tokens_after,
        )
        return result

    async def _idle_compact(self, job: Job, agent: SessionAgent, board: NoticeBoard) -> None:
        """`compression.idle_compact_after_seconds`: after a long silence, compact before replying."""
        due = getattr(agent.engine, "idle_compact_due", None)  # optional engine capability
        last = agent.state.extra.get(LAST_TURN_KEY)
        if not callable(due) or not isinstance(last, (int, float)) or not due(time.time() - last):
            return
        result = await agent.compress(trigger="idle", on_event=board)
        log.info("compression.idle", outcome=result.outcome, idle_seconds=round(time.time() - last))
        if result.changed:
            await self._persist(agent, compressed=True, new=(), job=job)

    async def _turn(self, job: Job, agent: SessionAgent) -> None:
        started = time.monotonic()
        limit = self.settings.max_message_chars
        if len(job.message.text) > limit:
            await self._deliver(job, TOO_LONG_TEXT.format(n=len(job.message.text), limit=limit))
            return
        if self.settings.model_missing_text is not None:
            await self._deliver(job, self.settings.model_missing_text)
            return
        board = self._board(job, agent, progress=self.settings.progress_notices)
        hygiene = await self._hygiene(job, agent, board)
        if hygiene is None or not hygiene.changed:
            await self._idle_compact(job, agent, board)
        agent.state.extra[LAST_TURN_KEY] = time.time()
        adapter = self._delivery.adapter(job.message.platform)
        streams = adapter is not None and adapter.limits.supports_edit
        preview = StreamPreview(self._delivery, job.route.target) if streams else None
        context = ToolContext(chat_id=job.route.chat_scope, session_id=agent.session_id, user_id=job.message.user_id,
                              untrusted=writer_standing(job.message, self.settings.admins))
        async with typing_while(adapter, job.route.target):
            recall = None
            if self._memory is not None:
                recall = await self._memory.prefetch(job.route.chat_scope, job.message.user_id, job.message.text)
            result = await agent.run_turn(
                user_line(job), context=context, on_text=preview, on_event=board, recall=recall
            )
        if result.compressed:
            agent.state.extra.pop(STALLED_KEY, None)
        await asyncio.shield(self._persist(agent, compressed=result.compressed, new=result.new_messages, job=job))
        delivered = await self._deliver(job, result.reply, draft=preview.draft if preview else None)
        self.turns_run += 1
        log.info(
            "turn.finished",
            latency_ms=round((time.monotonic() - started) * 1000, 1),
            queue_ms=round((time.time() - job.accepted_at) * 1000, 1) if job.accepted_at else None,
            requests=result.usage.requests,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            last_prompt_tokens=result.usage.last_prompt_tokens,
            compressions=sum(1 for c in result.compressions if c.changed) + (1 if hygiene and hygiene.changed else 0),
            hygiene=hygiene.outcome if hygiene else "none",
            stop_reason=result.stop_reason,
            delivered=delivered,
            messages=len(agent.history),
        )
        if self._post_turn is not None:
            await self._post_turn(FinishedTurn(job=job, agent=agent, reply=result.reply, new_messages=result.new_messages))
        if self._memory is not None:
            # After delivery and off the lane: a slow provider never delays the next turn.
            sync = asyncio.create_task(
                self._memory.sync(job.route.chat_scope, job.message.user_id, result.new_messages)
            )
            self._syncs.add(sync)
            sync.add_done_callback(self._syncs.discard)

    async def close(self, *, timeout: float = 5.0) -> None:
        """Wait (bounded) for provider syncs in flight, then shut the provider down."""
        if self._syncs:
            await asyncio.wait(set(self._syncs), timeout=timeout)
        if self._memory is not None:
            await self._memory.shutdown()

    async def _deliver(self, job: Job, text: str, *, draft: object = None) -> bool:
        item = OutboundItem(
            platform=job.message.platform,
            chat_id=job.message.chat_id,
            thread_id=job.message.thread_id,
            text=text,
            session_key=job.route.key,
            reply_to=job.message.message_id if job.message.chat_type == "group" else None,
        )
        item_id = await self._delivery.record(item)
        # The reply is durable now: the inbound message need not be re-run after a restart.
        self._finish_journal(job)
        if job.journal_entry is not None:
            self._journal_done.add(job.journal_entry)
        result = await self._delivery.send_recorded(
            item_id, item, draft=draft if isinstance(draft, SentMessage) else None
        )
        return result.sent

    async def _compress(self, job: Job, agent: SessionAgent) -> None:
        board = self._board(job, agent, progress=False)
        result = await agent.compress(trigger="manual", force=True, on_event=board)
        if result.changed:
            agent.state.extra.pop(STALLED_KEY, None)
            await self._persist(agent, compressed=True, new=(), job=job)
            text = f"context compressed: {result.tokens_before:,} → {result.tokens_after:,} tokens"
        else:
            await self._agents.save(job.route, agent)
            text = f"nothing compressed ({result.reason or result.outcome})"
        await self._deliver(job, text)


__all__ = ["FAILED_TEXT", "FinishedTurn", "PostTurnHook", "TurnRunner", "TurnSettings", "user_line"]

