"""Running one session job: a turn, a context-only record, or a queued command, under the session lock.

Owns `TurnRunner`. For a turn: hold the session lock (renewed) for the whole
job, get the session's agent, run hygiene at most once (docs/design.md §2.3), run the
conversation loop with typing, streaming and progress notices, persist the
messages (append, or replace/rotate after a compression), save the agent
state, record the reply in the outbox and send it, then hand the turn to the
post-turn hook (background review). A failed turn tells the chat briefly,
without internals. Logs one canonical `turn.finished` line. Knows the
platforms only through `Delivery`.

Over 600 lines (STYLE §4): one turn's whole path reads here top to bottom, and this round's limits,
approvals, group lines and disk retries each added a step to it. The next split moves the failure lines
and the reply's delivery (`_tell_failure`, `_deliver`, `_send_reply`, `_stay_silent`) to a module of their own.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import structlog
from structlog.contextvars import bind_contextvars

from adapters.base import AdapterError, Reacting, SentMessage
from agent.context.engine import CompressionResult
from agent.loop import TurnResult, TurnUsage
from agent.memory import NotesStore
from agent.memory.providers import MemoryManager
from agent.messages import Message, assistant, user
from agent.model_retry import retry_notice
from agent.session import SessionAgent
from agent.tools.base import ToolContext
from chorus_errors import ModelAuthError, ModelError, ModelNotConfigured, ModelUnavailable, RateLimited
from gateway.approvals import ApprovalGate, Approvals, Asker
from gateway.chats.participants import participant_notes, user_notes_scope
from gateway.chats.provenance import writer_standing
from gateway.chats.store import ChatStore, Usage
from gateway.commands.calls import SessionCall
from gateway.commands.spec import Command, Queued
from gateway.commands.table import COMMANDS
from gateway.coord.base import OutboundItem
from gateway.coord.hold import LockBusy
from gateway.delivery.notices import NoticeBoard, agent_notice
from gateway.delivery.outbound import STOP_FINISH_SECONDS, Delivery, StreamPreview, stopped_text, typing_while
from gateway.delivery.reactions import Reactions
from gateway.delivery.tool_progress import ProgressMode, ToolProgress
from gateway.i18n import Phrase, say
from gateway.intake.entries import JournalEntries
from gateway.intake.queueing import STOPPED, Job
from gateway.limits import SpendGate, Tally, hit_text
from gateway.ops.events import EventBus, HygieneRan, TurnFailed, TurnFinished
from gateway.ops.logs import bind_message_context, kept
from gateway.sessions.hygiene import check_hygiene
from gateway.sessions.lines import is_ours, quote_line, render
from gateway.sessions.lines import prefix as line_prefix
from gateway.sessions.media import MediaReader, TurnRefused, describe_all
from gateway.sessions.service import SessionService
from gateway.sessions.store_writes import StoreWrites, retry_delay, storage_failure
from gateway.telemetry.spans import SPANS, job_span, mark_failed, note, stage

log = structlog.get_logger(__name__)

GroupErrors: TypeAlias = Literal["reply", "react", "silent"]



@dataclass(frozen=True, slots=True)
class TurnSettings:
    in_place: bool
    progress_notices: bool
    context_length: int
    hard_message_limit: int
    max_message_chars: int
    model_missing: bool  # no model is configured: every turn is answered "turn.model_missing"
    tool_progress_dms: ProgressMode = "off"
    tool_progress_groups: ProgressMode = "off"
    admins: Mapping[str, frozenset[str]] = field(default_factory=dict)  # platforms.<p>.admins: trusted note writers in groups
    group_errors: GroupErrors = "reply"  # gateway.group_errors: how a failed turn shows in a group (DMs always reply)
    silence_token: str | None = None  # gateway.silence_token: a reply that is exactly this is stored, not sent


@dataclass(frozen=True, slots=True)
class FinishedTurn:
    """What the post-turn hook receives."""

    job: Job
    agent: SessionAgent
    reply: str
    new_messages: tuple[Message, ...]


PostTurnHook = Callable[[FinishedTurn], Awaitable[None]]


def session_usage(agent: SessionAgent) -> Usage:
    """The tokens this session has used so far (kept in the agent state across processes)."""
    return Usage.from_json(agent.state.marks.usage)


class _Notices:
    """`NoticeChannel` over `Delivery` for one chat."""

    def __init__(self, delivery: Delivery, job: Job) -> None:
        self._delivery = delivery
        self._target = job.route.target
        self.language = job.language

    async def send_notice(self, text: Phrase) -> object:
        return await self._delivery.send_notice(self._target, text)

    async def edit_notice(self, handle: object, text: Phrase) -> None:
        if isinstance(handle, SentMessage):
            await self._delivery.edit_notice(handle, text)
        else:
            await self._delivery.send_notice(self._target, text)

    async def send_progress(self, text: str) -> object:
        return await self._delivery.send_text(self._target, text)

    async def edit_progress(self, handle: object, text: str) -> None:
        # Throttled like a streaming draft: an edit due too soon is skipped, never waited for.
        if isinstance(handle, SentMessage):
            await self._delivery.edit_text(handle, text, final=False)


def user_line(job: Job) -> Message:
    """The user message as the model sees it (`gateway.sessions.lines`): sender, quote, edit, observed label.

    Attachments are described in one line each (`MediaReader` reads them for a turn).
    """
    text = describe_all(job.message) if job.message.attachments else job.message.text
    return user(render(job.message, text, shared=job.route.shared, observed=job.kind == "record"))


def stored_reply(history: list[Message], asked: Message) -> str | None:
    """The reply already in `history` to `asked`, if the session's last user message is `asked` and was answered.

    A resumed job (its process died between storing the turn and recording the reply) is answered
    from the history instead of being run again, so the user's message is never stored twice.
    """
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "user":
            if history[index].content != asked.content:
                return None
            last = history[-1]
            answered = index < len(history) - 1 and last.role == "assistant" and not last.tool_calls
            return last.text if answered else None
    return None


class TurnRunner:
    """Executes jobs from the session lanes.

    Args:
        sessions: the one owner of work on a session (lock, agent, persist, save).
        delivery: outgoing messages.
        entries: the inbound journal's entries (one is done when its job's reply is recorded, or the job ends).
        settings: turn limits and switches.
        post_turn: called after a reply was delivered (background review); never blocks the reply.
        memory: the external memory provider manager (prefetch before a turn, sync after it), if any.
        bus: where turn and hygiene events are published (metrics and the admin event list read them).
        media: reads attachments into the user message (None: they are described in one line).
        chats: the per-chat store the usage of each turn is added to (None: not kept).
        store_writes: the store's write health, which this runner reports to (read by /readyz and the metrics).
        limits: the spend and rate limits: checked once before a turn's model call, and every model call
            of a job charged (None: no limits, nothing counted).
        approvals: tool approvals (`tools.approval`): each turn gets its gate (None: no tool waits).
        notes: every chat's notes, for a group sender's own USER notes (None: not shown).
        reactions: `gateway.reactions` (✅ answered, ⚠️ failed; the gateway adds 👀 on receipt).
    """

    def __init__(
        self,
        *,
        sessions: SessionService,
        delivery: Delivery,
        entries: JournalEntries,
        settings: TurnSettings,
        post_turn: PostTurnHook | None = None,
        memory: MemoryManager | None = None,
        bus: EventBus | None = None,
        media: MediaReader | None = None,
        chats: ChatStore | None = None,
        store_writes: StoreWrites | None = None,
        limits: SpendGate | None = None,
        approvals: Approvals | None = None,
        notes: NotesStore | None = None,
        reactions: Reactions | None = None,
    ) -> None:
        self._sessions = sessions
        self.store_writes = store_writes or StoreWrites("the session store")
        self._approvals = approvals
        self._notes = notes
        self._bus = bus or EventBus()
        self._delivery = delivery
        self._entries = entries
        self._shared_journal = entries.shared  # drafts noted for takers
        self.settings = settings
        self._post_turn = post_turn
        self._memory = memory
        self._media = media
        self._chats = chats
        self._limits = limits
        self._syncs: set[asyncio.Task[bool]] = set()
        # Steer mode: takes the queued turns of a session for the running one (set by the gateway's lanes).
        self.steering: Callable[[str], list[Job]] | None = None
        self.reactions = reactions
        self.turns_run = 0
        self.hygiene_runs = 0

    async def run(self, job: Job) -> None:
        """Run a job; cancellation (stop, interrupt, shutdown) leaves its journal entry for a re-run.

        A job whose store write failed for the disk (full, or failing) keeps its journal entry and is run again
        with backoff, in its lane (the session's later messages wait behind it, in order); the chat is told once
        that the reply is delayed, not lost.
        """
        attempt = 0
        while True:
            disk = await self._run_once(job)
            if disk is None:
                return
            if attempt == 0 and job.kind != "record":
                await self._delivery.send_notice(job.route.target, say(job.language, "turn.delayed"))
            await asyncio.sleep(retry_delay(attempt))  # a retry timer: the disk gets time to get space back
            attempt += 1
            job = dataclasses.replace(job, resumed=True)  # its turn may be stored already (answered from there)

    async def _run_once(self, job: Job) -> BaseException | None:
        """Run `job` once; the disk error when a store write failed for it (the job is then to be run again)."""
        bind_message_context(platform=job.message.platform, chat_id=job.message.chat_id, session_key=job.route.key)
        waiting_since = time.monotonic()
        try:
            with job_span(job), self._entries.running(job):  # done when the job ends; kept when cancelled or run again
                await self._run(job, waiting_since)
        except _RunAgain as again:
            return again.disk
        return None

    async def _run(self, job: Job, waiting_since: float) -> None:
        try:
            with self._metered(job) as tally:
                await self._run_held(job, tally, waiting_since)
            if not self.store_writes.ok:
                self.store_writes.succeeded()
        except asyncio.CancelledError:
            log.info("turn.cancelled", kind=job.kind)
            raise
        except LockBusy:
            log.warning("turn.lock_busy", kind=job.kind)
            self._bus.publish(TurnFailed(job.message.platform, job.route.key, "lock_busy"))
            await self._tell_failure(job, say(job.language, "turn.busy"))
        except Exception as exc:  # noqa: BLE001 - the task boundary: log, tell the chat briefly
            disk = storage_failure(exc)
            if disk is not None and (job.journal_entry is None
                                     or job.journal_entry not in self._entries.answered_entries):
                # Not answered yet: the message stays in the journal and the job runs again when the disk has room.
                self.store_writes.failed(disk)
                self._bus.publish(TurnFailed(job.message.platform, job.route.key, "store_write"))
                self._sessions.agents.forget(job.route)  # rebuilt from what the store really holds
                raise _RunAgain(disk) from exc
            log.exception("turn.failed", kind=job.kind, error=type(exc).__name__)
            mark_failed(exc)
            self._bus.publish(TurnFailed(job.message.platform, job.route.key, type(exc).__name__))
            if isinstance(exc, ModelAuthError):
                log.error("model.auth_failed", model=exc.model, status=exc.status,
                          fix="check model.api_key (or that fallback's api_key) and the model's access")
            await self._tell_failure(job, self._failure_text(exc, job.language))
            if job.kind == "turn" and self.reactions is not None:
                await self.reactions.mark(job.message, "failed")

    def _metered(self, job: Job) -> contextlib.AbstractContextManager[Tally | None]:
        """Every model call of the job (and of the review it starts) charged to its sender and chat."""
        return self._limits.metered(job.message, job.route) if self._limits is not None else contextlib.nullcontext()

    async def _run_held(self, job: Job, tally: Tally | None, waiting_since: float) -> None:
        async with self._sessions.session(job.route) as held:
            lock_wait = time.monotonic() - waiting_since
            bind_contextvars(lock_wait_ms=round(lock_wait * 1000, 2))
            agent = held.agent
            if job.kind == "record":
                await self._record(job, agent)
            elif job.kind == "command" and job.command is not None:
                await self._command(job, job.command, agent, lock_wait=lock_wait, tally=tally)
            else:
                await self.turn(job, agent, retry=False, lock_wait=lock_wait, tally=tally)
            if held.held.lost:
                # Renewal failed (e.g. a long Redis outage): another process may have run this session.
                log.warning("turn.lock_lost", kind=job.kind)

    async def _refused(self, job: Job, agent: SessionAgent, *, retry: bool) -> bool:
        """The one limit check of a turn, before any model call; True: refused (the message kept as context)."""
        if self._limits is None:
            return False
        hit = await self._limits.admit(job.message, job.route)
        if hit is None:
            return False
        if not retry:
            await self._record(job, agent)
        if hit.first:  # once per window: later refusals in it are silent
            await self._answer(job, hit_text(hit, job.language))
        return True

    def _failure_text(self, exc: Exception, language: str) -> Phrase:
        if isinstance(exc, ModelNotConfigured) and self.settings.model_missing:
            return say(language, "turn.model_missing")
        if isinstance(exc, ModelAuthError):
            return say(language, "turn.auth")
        if isinstance(exc, RateLimited):
            return say(language, "turn.rate")
        if isinstance(exc, ModelUnavailable):
            return say(language, "turn.unavailable")
        if isinstance(exc, ModelError) and exc.status is not None and 400 <= exc.status < 500:
            return say(language, "turn.refused")
        return say(language, "turn.failed")

    async def _tell_failure(self, job: Job, text: Phrase) -> None:
        """Say a turn failed: one line in a DM; in a group as `gateway.group_errors` says (a reaction, or nothing)."""
        if job.kind == "record":
            return
        mode = "reply" if job.route.kind == "dm" else self.settings.group_errors
        if mode == "reply":
            await self._delivery.send_notice(job.route.target, text)
            return
        adapter = self._delivery.adapter(job.message.platform)
        if mode == "react" and isinstance(adapter, Reacting) and not job.message.scheduled:
            try:
                await adapter.react(job.route.target, job.message.message_id, "failed")
            except (AdapterError, ConnectionError, OSError) as exc:
                log.info("turn.failure_reaction_failed", error=type(exc).__name__)
            return
        log.info("turn.failure_not_shown", mode=mode)  # silent, or a platform without reactions

    async def _record(self, job: Job, agent: SessionAgent) -> None:
        message = user_line(job)
        await self._sessions.append(agent, [message])
        agent.append_context([message])

    def _board(self, job: Job, agent: SessionAgent, *, progress: bool) -> NoticeBoard:
        return NoticeBoard(_Notices(self._delivery, job), progress=progress, warned=agent.state.marks.warned)

    async def _hygiene(self, job: Job, agent: SessionAgent, board: NoticeBoard) -> CompressionResult | None:
        decision = check_hygiene(
            agent.history,
            last_prompt_tokens=agent.engine.state.last_prompt_tokens,
            context_length=agent.engine.context_length,  # the active model's window: the chat's (/model), learned ones included
            hard_message_limit=self.settings.hard_message_limit,
            stalled_at=agent.state.marks.stalled_at,
        )
        if not decision.compress:
            return None
        self.hygiene_runs += 1
        before = len(agent.history)
        result = await self._sessions.compress(job.route, agent, trigger="hygiene", on_event=board,
                                             save_unchanged=False)
        progressed = result.changed and (len(agent.history) < before or result.tokens_after < result.tokens_before)
        if not progressed:
            agent.state.marks.stalled_at = len(agent.history)  # not again until the history grows past this
        log.info(
            "hygiene.ran", reason=decision.reason, outcome=result.outcome, messages_before=before,
            messages_after=len(agent.history), tokens_before=result.tokens_before, tokens_after=result.tokens_after,
        )
        self._bus.publish(HygieneRan(job.route.key, decision.reason, result.outcome, before, len(agent.history)))
        return result

    async def _idle_compact(self, job: Job, agent: SessionAgent, board: NoticeBoard) -> None:
        """`compression.idle_compact_after_seconds`: after a long silence, compact before replying."""
        last = agent.state.marks.last_turn_at
        if last is None or not agent.engine.idle_compact_due(time.time() - last):
            return
        result = await self._sessions.compress(job.route, agent, trigger="idle", on_event=board, save_unchanged=False)
        log.info("compression.idle", outcome=result.outcome, idle_seconds=round(time.time() - last))

    async def _participant_notes(self, job: Job) -> str | None:
        """The sender's own USER notes in a group, for this turn only (a shared session's prompt is everyone's)."""
        if self._notes is None or job.route.kind == "dm":
            return None
        try:
            return await asyncio.to_thread(
                participant_notes, self._notes, job.route, job.message.user_id, job.message.user_name
            )
        except Exception as exc:  # noqa: BLE001 - the turn goes on without them
            log.warning("notes.participant_unreadable", error=type(exc).__name__)
            return None

    def _steer(self, job: Job, taken: list[Job]) -> Callable[[], list[Message]] | None:
        """What the loop asks at each tool-result boundary: the session's queued turns, as user lines."""
        steering = self.steering
        if steering is None:
            return None

        def steer() -> list[Message]:
            jobs = steering(job.route.key)
            taken.extend(jobs)
            if jobs:
                log.info("turn.steered", messages=len(jobs))
            return [user_line(steered) for steered in jobs]

        return steer

    async def _run_agent(
        self, job: Job, agent: SessionAgent, message: Message, *, retry: bool, context: ToolContext,
        on_text: StreamPreview | None, on_event: NoticeBoard, recall: str | None, on_tool: ToolProgress | None,
        steered: list[Job] | None = None,
    ) -> TurnResult:
        """The loop, with "busy, retrying" notices to this chat; a failure keeps the user's message for /retry."""
        async def notice(text: str) -> None:
            await self._delivery.send_notice(job.route.target, agent_notice(job.language, text))

        token = retry_notice.set(notice)
        try:
            result = await agent.run_turn(
                message, context=context, on_text=on_text, on_event=on_event, recall=recall, on_tool=on_tool,
                steer=self._steer(job, steered) if steered is not None else None,
            )
        except ModelError:
            agent.history.append(message)
            agent.state.marks.failed_message = message.text
            if not retry:  # a /retry's message is stored already
                await self._sessions.append(agent, [message])
            await self._sessions.agents.save(job.route, agent)
            raise
        finally:
            retry_notice.reset(token)
        agent.state.marks.failed_message = None
        return result

    async def _turn_message(
        self, job: Job, agent: SessionAgent, *, retry: bool, draft: SentMessage | None,
    ) -> tuple[Message, bool] | None:
        """The user message this turn answers, and whether it is a /retry of the stored one in place; None: replied."""
        limit = self.settings.max_message_chars
        if len(job.message.text) > limit:
            await self._answer(job, say(job.language, "turn.too_long", n=len(job.message.text), limit=limit))
            return None
        if self.settings.model_missing:
            await self._answer(job, say(job.language, "turn.model_missing"))
            return None
        if job.resumed and not retry and not job.message.attachments:
            reply = stored_reply(agent.history, user_line(job))
            if reply is not None:
                log.info("turn.answered_from_history")
                await self._deliver(job, reply, draft=draft)
                return None
        if retry:
            failed = agent.state.marks.failed_message
            if failed is None:
                await self._answer(job, say(job.language, "turn.nothing_to_retry"))
                return None
            last = agent.history[-1] if agent.history else None
            in_place = last is not None and last.role == "user" and last.text == failed
            # The failed message is still the last one: run it again in place; else (group lines came after) ask again.
            return (agent.history.pop() if in_place else user(failed)), in_place
        if self._media is not None and job.message.attachments:
            head = line_prefix(job.message, shared=job.route.shared)
            if job.message.quote is not None:
                head += quote_line(job.message.quote, shared=job.route.shared, ours=is_ours(job.message)) + "\n"
            async with typing_while(self._delivery.adapter(job.message.platform), job.route.target):
                read = await self._media.user_turn(job.message, prefix=head)  # downloads and transcription take a moment
            if isinstance(read, TurnRefused):
                await self._answer(job, read.said(job.language))
                return None
            return read, False
        return user_line(job), False

    async def _command(
        self, job: Job, command: Command, agent: SessionAgent, *, lock_wait: float, tally: Tally | None = None,
    ) -> None:
        """A queued command (`/compress`, `/retry`): its spec's handler, with this runner as its `SessionJobs`."""
        run = COMMANDS.spec(command).run
        if not isinstance(run, Queued):  # decided at intake: immediate commands never join a lane
            raise TypeError(f"/{command.name} is not a queued command")
        await run.handler(SessionCall(command, job, agent, _MeteredJobs(self, tally), lock_wait))

    async def turn(
        self, job: Job, agent: SessionAgent, *, retry: bool, lock_wait: float | None, tally: Tally | None = None,
    ) -> None:
        """Answer the job's message (or, `retry`, the user's last failed one) under the held session lock."""
        started = time.monotonic()
        if await self._refused(job, agent, retry=retry):
            return
        draft = await self._taken_over_draft(job)
        prepared = await self._turn_message(job, agent, retry=retry, draft=draft)
        if prepared is None:
            return  # answered already (too long, no model, nothing to retry, an unreadable file)
        turn_message, retry = prepared
        board = self._board(job, agent, progress=self.settings.progress_notices)
        hygiene = await self._hygiene(job, agent, board)
        if hygiene is None or not hygiene.changed:
            await self._idle_compact(job, agent, board)
        agent.state.marks.last_turn_at = time.time()
        adapter = self._delivery.adapter(job.message.platform)
        streams = adapter is not None and adapter.limits.supports_edit
        preview = StreamPreview(self._delivery, job.route.target, draft=draft, on_draft=self._draft_noter(job),
                                language=job.language) if streams else None
        context = ToolContext(chat_id=job.route.chat_scope, session_id=agent.session_id, user_id=job.message.user_id,
                              untrusted=writer_standing(job.message, self.settings.admins), gate=self._gate(job),
                              user_notes=user_notes_scope(job.route, job.message.user_id),
                              thread_id=job.message.thread_id, group=job.message.chat_type == "group")
        mode = self.settings.tool_progress_dms if job.route.kind == "dm" else self.settings.tool_progress_groups
        progress = ToolProgress(_Notices(self._delivery, job), mode=mode) if mode != "off" else None
        steered: list[Job] = []
        try:
            async with typing_while(adapter, job.route.target):
                recall = await self._participant_notes(job)
                if self._memory is not None:
                    provided = await self._memory.prefetch(job.route.chat_scope, job.message.user_id, turn_message.text)
                    recall = "\n\n".join(part for part in (recall, provided) if part) or None
                result = await self._run_agent(
                    job, agent, turn_message, retry=retry, context=context, on_text=preview, on_event=board,
                    recall=recall, on_tool=progress, steered=steered,
                )
        except asyncio.CancelledError as cancel:
            if preview is not None and cancel.args == (STOPPED,):
                # Stopped from the chat: no cursor left on the partial reply (a shutdown keeps it for the resume).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(STOP_FINISH_SECONDS):
                        await preview.finish()
            if cancel.args == (STOPPED,):
                await self._keep_stopped(job, agent, turn_message, retry=retry, partial=preview.text if preview else "")
            raise
        if result.compressed:
            agent.state.marks.stalled_at = None
        self._count_usage(job, agent, result.usage)
        new = result.new_messages[1:] if retry and not result.compressed else result.new_messages
        await self._sessions.persist_through(job.route, agent, compressed=result.compressed, new=new)
        if result.notice:
            await self._delivery.send_notice(job.route.target, agent_notice(job.language, result.notice))
        if preview is not None:
            await preview.settle()
        delivered = await self._send_reply(job, result.reply, tally=tally, steered=steered,
                                           draft=preview.draft if preview else draft)
        self.turns_run += 1
        if kept("turn.finished"):
            self._log_finished(job, agent, result, hygiene, started=started, delivered=delivered)
        self._bus.publish(TurnFinished(
            platform=job.message.platform, session_key=job.route.key, latency_seconds=time.monotonic() - started,
            lock_wait_seconds=lock_wait, prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens, delivered=delivered,
        ))
        if self._post_turn is not None:
            await self._post_turn(FinishedTurn(job=job, agent=agent, reply=result.reply, new_messages=result.new_messages))
        if self._memory is not None:
            # After delivery and off the lane: a slow provider never delays the next turn.
            sync = asyncio.create_task(
                self._memory.sync(job.route.chat_scope, job.message.user_id, result.new_messages)
            )
            self._syncs.add(sync)
            sync.add_done_callback(self._syncs.discard)

    async def _keep_stopped(self, job: Job, agent: SessionAgent, asked: Message, *, retry: bool, partial: str) -> None:
        """A turn stopped from the chat: the session keeps the question and the reply as far as it was shown, marked
        stopped, so a reloaded page (and the model, next turn) see what the user saw. A /retry's question is stored."""
        reply = assistant(stopped_text(partial, say(job.language, "stream.stopped")))
        agent.history.extend([asked, reply])
        await self._sessions.persist_through(job.route, agent, compressed=False, new=[reply] if retry else [asked, reply])

    async def _send_reply(self, job: Job, reply: str, *, tally: Tally | None, steered: list[Job],
                          draft: SentMessage | None) -> bool:
        """Deliver the turn's reply (with the usage footer), or stay silent for the silence token; True: sent."""
        if self._silent(reply):
            delivered = await self._stay_silent(job, draft)
        else:
            footer = (tally.footer(self._limits.footer_mode(), job.language)
                      if tally is not None and self._limits is not None else None)
            if footer is not None and reply.strip():
                reply = f"{reply}\n\n{footer}"
            delivered = await self._deliver(job, reply, draft=draft)
        for answered in steered:  # answered by this reply: not re-run after a restart
            for entry in answered.entries:
                self._entries.done(entry)
        if delivered and self.reactions is not None:
            await self.reactions.mark(job.message, "answered")
        return delivered

    def _gate(self, job: Job) -> ApprovalGate | None:
        """The turn's approval gate (None: no tool needs a person's yes in this chat)."""
        if self._approvals is None:
            return None
        message = job.message
        return self._approvals.gate(Asker(session_key=job.route.key, chat_scope=job.route.chat_scope,
                                          target=job.route.target, user_id=message.user_id, user_name=message.user_name,
                                          language=job.language))

    @staticmethod
    def _log_finished(job: Job, agent: SessionAgent, result: TurnResult, hygiene: CompressionResult | None, *,
                      started: float, delivered: bool) -> None:
        """The turn's canonical line (`turn.finished`)."""
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

    def _count_usage(self, job: Job, agent: SessionAgent, usage: TurnUsage) -> None:
        """This session's running total (in the agent state) and the chat's all-time total (in the chat store)."""
        turn = Usage(usage.prompt_tokens, usage.completion_tokens, usage.requests)
        agent.state.marks.usage = session_usage(agent).plus(turn).to_json()
        if self._chats is not None:
            try:
                self._chats.add_usage(job.route.chat_scope, job.message.platform, turn)  # queued: no I/O here
            except Exception as exc:  # noqa: BLE001 - usage figures must never fail a turn
                log.warning("usage.store_failed", error=type(exc).__name__)

    async def memory_synced(self, *, timeout: float = 5.0) -> None:
        """Wait (bounded) until the memory provider's syncs in flight are done."""
        if self._syncs:
            await asyncio.wait(set(self._syncs), timeout=timeout)

    async def close(self, *, timeout: float = 5.0) -> None:
        """Wait (bounded) for provider syncs in flight, then shut the provider down."""
        await self.memory_synced(timeout=timeout)
        if self._memory is not None:
            await self._memory.shutdown()

    async def _taken_over_draft(self, job: Job) -> SentMessage | None:
        """The draft a replica that died mid-stream left for this message (a shared journal notes them)."""
        journal = self._shared_journal
        if not (job.resumed and job.journal_entry and journal is not None):
            return None
        try:
            draft_id = await asyncio.to_thread(journal.draft_of, job.journal_entry)
        except Exception as exc:  # noqa: BLE001 - without it the reply is a new message, as before
            log.warning("turn.draft_lookup_failed", error=type(exc).__name__)
            return None
        return SentMessage(target=job.route.target, message_id=draft_id) if draft_id else None

    def _draft_noter(self, job: Job) -> Callable[[SentMessage], Awaitable[None]] | None:
        journal, entry = self._shared_journal, job.journal_entry
        if entry is None or journal is None:
            return None

        async def note(draft: SentMessage) -> None:
            try:
                journal.note_draft(entry, draft.message_id)  # queued on the journal's thread: no hop to wait for
            except Exception as exc:  # noqa: BLE001 - a taker would then send a new message, as before
                log.warning("turn.draft_note_failed", error=type(exc).__name__)

        return note

    def _silent(self, reply: str) -> bool:
        token = self.settings.silence_token
        return bool(token) and reply.strip() == token

    async def _stay_silent(self, job: Job, draft: SentMessage | None) -> bool:
        """The persona chose not to answer: the reply is stored (above), nothing is sent; a draft is removed."""
        log.info("turn.silent", token=self.settings.silence_token)
        self._entries.answered(job)  # stored, and deliberately not sent: never re-run
        adapter = self._delivery.adapter(job.message.platform)
        if draft is not None and adapter is not None:
            try:
                await adapter.delete(draft)
            except Exception as exc:  # noqa: BLE001 - a leftover draft is cosmetic
                log.warning("turn.silent_draft_left", error=type(exc).__name__)
        return False

    async def _deliver(self, job: Job, text: str, *, draft: SentMessage | None = None) -> bool:
        """Record the reply in the outbox and send it; an empty one never enters the outbox (one short notice)."""
        if not text.strip():
            log.warning("turn.empty_reply")
            if draft is not None:
                with contextlib.suppress(AdapterError, ConnectionError, OSError):
                    adapter = self._delivery.adapter(draft.target.platform)
                    if adapter is not None:
                        await adapter.delete(draft)
            await self._tell_failure(job, say(job.language, "turn.empty"))
            return False
        item = OutboundItem(
            platform=job.message.platform,
            chat_id=job.message.chat_id,
            thread_id=job.message.thread_id,
            text=text,
            session_key=job.route.key,
            reply_to=job.message.message_id if job.message.chat_type == "group" and not job.message.scheduled else None,
            answers=job.journal_entry,
            draft_id=draft.message_id if draft is not None else None,
        )
        with stage(SPANS.DELIVERY, {SPANS.PLATFORM: item.platform}):
            item_id = await self._delivery.record(item)
            self._entries.answered(job)  # the reply is durable now: the message need not be re-run after a restart
            result = await self._delivery.send_recorded(item_id, item)
            note(SPANS.SENT, result.sent)
        return result.sent

    async def compress(self, job: Job, agent: SessionAgent) -> CompressionResult:
        """Compress the session now (`/compress`: forced) and persist the result."""
        board = self._board(job, agent, progress=False)
        return await self._sessions.compress(job.route, agent, trigger="manual", force=True, on_event=board)

    async def _answer(self, job: Job, text: Phrase) -> bool:
        """The gateway's own words as the job's answer (recorded and sent like a reply)."""
        return await self._deliver(job, text)

    async def reply(self, job: Job, text: Phrase) -> None:
        await self._answer(job, text)


class _RunAgain(Exception):  # noqa: N818 - a control signal, not an error: the job runs again when the disk has room
    """Leaves `JournalEntries.running` with the job's entry kept: its store write failed for the disk."""

    def __init__(self, disk: BaseException) -> None:
        super().__init__(str(disk))
        self.disk = disk


@dataclass(frozen=True, slots=True)
class _MeteredJobs:
    """The runner as a queued command's `SessionJobs`, its turns charged to the job's tally (`/retry`)."""

    runner: TurnRunner
    tally: Tally | None

    async def turn(self, job: Job, agent: SessionAgent, *, retry: bool, lock_wait: float | None) -> None:
        await self.runner.turn(job, agent, retry=retry, lock_wait=lock_wait, tally=self.tally)

    async def compress(self, job: Job, agent: SessionAgent) -> CompressionResult:
        return await self.runner.compress(job, agent)

    async def reply(self, job: Job, text: Phrase) -> None:
        await self.runner.reply(job, text)


__all__ = [
    "FinishedTurn", "GroupErrors", "PostTurnHook", "TurnRunner",
    "TurnSettings", "session_usage", "stored_reply", "user_line",
]

