"""The gateway: adapters → queue → intake → per-session lanes → turns → delivery.

Owns `Gateway` (explicit, repeatable `start()`/`stop()`; the constructor only
assigns) and `GatewayParts`, the collaborators it is built from. It consumes
the adapters' shared `asyncio.Queue`, acts on each `IntakeDecision` (refuse,
record, answer, or run a command at once even while the session is busy),
journals accepted messages so a restart re-runs unfinished turns, resends
pending replies from the outbox, and on `stop()` stops intake, gives turns in
flight a grace period, and leaves what did not finish in the journal/outbox.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from adapters.base import InboundMessage, PlatformAdapter
from adapters.normalize import normalize_inbound
from adapters.receipts import IntakeReceipts
from agent.memory import NotesStore
from agent.model_windows import ModelWindows
from agent.store import SessionStore
from agent.tools.mcp import McpHub
from gateway.chats.commands import ChatCommands, CommandContext, admin_refusal
from gateway.chats.forget import forget_notes
from gateway.chats.pairing import PairingStore
from gateway.chats.policy import ChatPolicy
from gateway.chats.store import ChatStore
from gateway.chats.whoami import whoami_text
from gateway.coord import Coordinator
from gateway.coord.base import Outbox
from gateway.delivery.outbound import Delivery
from gateway.delivery.outbox_file import JournaledOutbox
from gateway.delivery.queued import QueuedNotices
from gateway.intake.allowlist import REFUSAL_TEXT
from gateway.intake.busy import BusyRules, Timers
from gateway.intake.commands import HELP_TEXT, Command, StatusInfo, render_status
from gateway.intake.deadletter import DeadLetterBox, Stage
from gateway.intake.decide import Intake, IntakeDecision
from gateway.intake.edits import RecentTexts, merge_edit
from gateway.intake.journals import MAX_TAKEOVERS, DuplicateDelivery, Journal, JournalBacklog, SharedJournal
from gateway.intake.queueing import BusyMode, Job, SessionLanes
from gateway.intake.routing import Route
from gateway.ops.events import DeadLettered, EventBus, MessageAccepted, TaskDied
from gateway.ops.health import Readiness, StoreHealth
from gateway.ops.logs import kept
from gateway.ops.supervise import Supervisor
from gateway.sessions.agents import AgentPool
from gateway.sessions.hygiene import estimate_history_tokens
from gateway.sessions.service import SessionService
from gateway.sessions.turns import TurnRunner

log = structlog.get_logger(__name__)

RESEND_INTERVAL = 1.0
# Each store write adds a small full-text index segment; searches slow down ~3x until they are
# merged (bench/search.py), so the index is compacted in the background at this interval.
INDEX_COMPACT_INTERVAL = 300.0
# The store is pinged this often; /readyz fails once a ping does (a shared PostgreSQL may go away).
STORE_PING_INTERVAL = 5.0
STORE_PING_TIMEOUT = 3.0
QUEUED_TEXT = "queued: I'll answer this after the current reply ({n} ahead)"
INTERRUPTED_TEXT = "stopping the previous reply to answer this one"
CONSUME_BATCH = 256
TAKEOVER_BATCH = 64  # entries of dead replicas taken over per round (the rest wait a round)
PRUNE_EVERY = 600  # lease rounds between prunes of finished shared-journal rows
NEW_TEXT = "Started a new conversation. My notes about this chat are kept; /memory shows them."


class ShutdownErrors:
    """Errors raised while closing parts: each part still closes, and every failure is logged once at the end."""

    def __init__(self) -> None:
        self.failures: list[tuple[str, BaseException]] = []

    async def run(self, what: str, close: Callable[[], Awaitable[None]]) -> None:
        try:
            await close()
        except Exception as exc:  # noqa: BLE001 - one part failing to close must not keep the others open
            self.failures.append((what, exc))

    def log(self) -> None:
        for what, exc in self.failures:
            log.error("gateway.stop_failed", part=what, error=type(exc).__name__, detail=str(exc)[:200])
class Resource(Protocol):
    """A long-lived collaborator with a symmetric lifecycle."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class GatewayParts:
    """Everything the gateway is made of (built elsewhere, without I/O)."""

    coordinator: Coordinator
    store: SessionStore
    adapters: Mapping[str, PlatformAdapter]
    agents: AgentPool
    sessions: SessionService
    bus: EventBus
    runner: TurnRunner
    delivery: Delivery
    intake: Intake
    journal: Journal
    outbox: Outbox
    busy_mode: BusyMode = "queue"
    shutdown_grace: float = 10.0
    notes_text: Callable[[str], str] | None = None
    notes: NotesStore | None = None  # every chat's notes (staged writes are approved through the admin API)
    on_shutdown: Callable[[], Awaitable[None]] | None = None
    closers: tuple[Callable[[], Awaitable[None]], ...] = ()
    policy: ChatPolicy | None = None
    chats: ChatStore | None = None
    chat_commands: ChatCommands | None = None
    pairing: PairingStore | None = None
    resources: tuple[Resource, ...] = ()  # started before the adapters, stopped after the turns (MCP servers)
    mcp: McpHub | None = None
    windows: ModelWindows | None = None  # learned model windows and the model answering now
    deadletters: DeadLetterBox = field(default_factory=lambda: DeadLetterBox(None))
    busy_rules: BusyRules | None = None  # the busy mode per chat (live); None: `busy_mode` everywhere
    timers: Timers | None = None  # what `collect` waits on (tests inject their own clock)


class Gateway:
    """One gateway process (several may share one Redis)."""

    def __init__(self, parts: GatewayParts, *, supervisor: Supervisor | None = None) -> None:
        self.parts = parts
        self.supervisor = supervisor or Supervisor(on_death=lambda task, error: parts.bus.publish(TaskDied(task, error)))
        self.queued_notices = QueuedNotices(parts.delivery, text=lambda n: QUEUED_TEXT.format(n=n))
        self.queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
        self.lanes = self._new_lanes()
        self._side: set[asyncio.Task[None]] = set()
        self._in_hand: list[InboundMessage] = []  # taken from the queue, not yet decided
        self._journal_writing: asyncio.Future[list[str | Exception]] | None = None
        self._started_adapters: list[PlatformAdapter] = []
        self._started_resources: list[Resource] = []
        self._store_open = False
        self._running = False
        # Decided once: a runtime Protocol check costs more than the rest of recording a lone message.
        self._shared_journal = isinstance(parts.journal, SharedJournal)
        self.decisions: dict[str, int] = {}
        self.store_health = StoreHealth()
        self.journal_backlog: JournalBacklog | None = None  # the shared journal's, as of the last lease round
        self._receipts: dict[str, IntakeReceipts] = {}  # adapters whose webhooks wait for their message to be recorded
        self._texts = RecentTexts()  # what an edit changed, when its platform does not say

    def _new_lanes(self) -> SessionLanes:
        parts = self.parts
        lanes = SessionLanes(parts.runner.run, mode=parts.busy_mode, rules=parts.busy_rules, timers=parts.timers)
        parts.runner.steering = lanes.take_steerable  # steer mode: a running turn takes queued messages
        return lanes

    # lifecycle ----------------------------------------------------------------

    async def start(self) -> None:
        if self._running:
            raise RuntimeError("Gateway is already running; call stop() first")
        parts = self.parts
        await asyncio.to_thread(parts.store.open)
        if parts.chats is not None:
            await asyncio.to_thread(parts.chats.open)
        if parts.pairing is not None:
            await asyncio.to_thread(parts.pairing.open)
        self._store_open = True
        parts.journal.open()
        await parts.coordinator.start()
        if isinstance(parts.outbox, JournaledOutbox):
            restored = await parts.outbox.restore()
            if restored:
                log.info("outbox.restored", pending=restored)
        self.lanes = self._new_lanes()
        for resource in parts.resources:
            await resource.start()
            self._started_resources.append(resource)
        for name, adapter in parts.adapters.items():
            if isinstance(adapter, IntakeReceipts):
                adapter.expect_receipts()
                self._receipts[name] = adapter
            await adapter.start(self.queue)
            self._started_adapters.append(adapter)
            log.info("adapter.started", platform=name)
        self._running = True
        for entry, message in parts.journal.recover():
            log.info("journal.replay", platform=message.platform, chat_id=message.chat_id)
            await self._replay(entry, normalize_inbound(message))
        self.supervisor.start("gateway-intake", self._consume)
        self.supervisor.start("gateway-resend", self._resend_loop)
        self.supervisor.start("gateway-index", self._index_loop)
        self.supervisor.start("gateway-store-watch", self._store_watch)
        if self._shared_journal:
            self.supervisor.start("gateway-leases", self._lease_loop)
            self.supervisor.start("gateway-takeover", self._takeover_loop)

    async def stop(self) -> None:
        """Stop intake, let turns finish within the grace period, persist the rest, close everything."""
        if not self._running and not self._store_open:
            return
        self._running = False
        await self.supervisor.stop()
        await self._journal_queued()
        unfinished = await self.lanes.drain(self.parts.shutdown_grace)
        if unfinished:
            log.warning("gateway.unfinished_jobs", jobs=len(unfinished), kept_in="journal")
        # A cancelled turn's history append and state save still finish before the store closes.
        try:
            await asyncio.wait_for(self.parts.sessions.settle(), timeout=max(1.0, self.parts.shutdown_grace))
        except TimeoutError:
            log.warning("gateway.persist_unfinished", kept_in="journal")
        for task in list(self._side):
            task.cancel()
        await asyncio.gather(*self._side, return_exceptions=True)
        await self.queued_notices.close()
        problems = ShutdownErrors()
        if self.parts.on_shutdown is not None:
            await problems.run("on_shutdown", self.parts.on_shutdown)
        for adapter in reversed(self._started_adapters):
            await problems.run(f"adapter {adapter.name}", adapter.stop)
        self._started_adapters = []
        # Messages that arrived during the grace period are kept for the next start.
        await self._journal_queued()
        for resource in reversed(self._started_resources):
            await problems.run(f"resource {type(resource).__name__}", resource.stop)
        self._started_resources = []
        for index, close in enumerate(self.parts.closers):
            await problems.run(f"closer {index}", close)
        problems.log()
        await self.parts.coordinator.stop()
        self.parts.journal.close()
        if isinstance(self.parts.outbox, JournaledOutbox):
            self.parts.outbox.close()
        if self._store_open:
            # Chats and pairing first: on PostgreSQL they borrow the session store's pool (pending usage is flushed).
            if self.parts.chats is not None:
                await asyncio.to_thread(self.parts.chats.close)
            if self.parts.pairing is not None:
                await asyncio.to_thread(self.parts.pairing.close)
            await asyncio.to_thread(self.parts.store.close)
            self._store_open = False
        log.info("gateway.stopped")

    async def readiness(self) -> Readiness:
        adapters_ok = bool(self._started_adapters) and len(self._started_adapters) == len(self.parts.adapters)
        store_ok = self._store_open and self.store_health.ok
        down = self.supervisor.down
        reasons = [task.reason for task in down]
        if self._store_open and not store_ok:
            reasons.append("the session store did not answer its last ping")
        # A shared coordination backend is fail-open (`gateway/coord/failopen.py`): while Redis is down this process
        # answers from its own memory, so it stays ready; the outage shows in `chorus_redis_errors_total`.
        return Readiness(
            store_open=store_ok, coordinator=True, adapters_started=adapters_ok,
            background_tasks=not down, detail="; ".join(reasons),
        )

    async def ping_store(self) -> StoreHealth:
        """Ping the session store once and record the outcome in `store_health`."""
        started = time.monotonic()
        previous = self.store_health
        try:
            await asyncio.wait_for(asyncio.to_thread(self.parts.store.ping), STORE_PING_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - any failure makes the gateway not ready, never crashes it
            if previous.ok:
                log.warning("store.unreachable", store=self.parts.store.location, error=type(exc).__name__)
            self.store_health = StoreHealth(False, time.monotonic() - started, previous.errors + 1)
        else:
            if not previous.ok:
                log.info("store.reachable", store=self.parts.store.location)
            self.store_health = StoreHealth(True, time.monotonic() - started, previous.errors)
        return self.store_health

    async def _store_watch(self) -> None:
        while True:
            await asyncio.sleep(STORE_PING_INTERVAL)
            await self.ping_store()

    # intake -------------------------------------------------------------------

    async def _consume(self) -> None:
        # Messages left in hand by an intake loop that died are quarantined, not retried: one of
        # them may be what killed it, and retrying would stop every chat again.
        left, self._in_hand = self._in_hand, []
        for message in left:
            self._quarantine(message, stage="intake", error=RuntimeError("intake loop died while handling it"))
        while True:
            # Take what is waiting (a burst of chats), so its journal entries are written in one
            # call (one append to the home's file, or one trip to the shared journal's database).
            messages = [normalize_inbound(await self.queue.get())]
            while len(messages) < CONSUME_BATCH and not self.queue.empty():
                messages.append(normalize_inbound(self.queue.get_nowait()))
            self._in_hand = messages  # emptied as they are decided; a stop journals what is left
            await self._consume_batch(messages)

    async def _consume_batch(self, messages: list[InboundMessage]) -> None:
        if not self._receipts:
            await self._decide_and_dispatch(messages)
            return
        batch = list(messages)  # `_decide_and_dispatch` consumes the list
        await self._decide_and_dispatch(messages)
        for message in batch:  # recorded (or not needing it): a waiting webhook may answer now
            if (adapter := self._receipts.get(message.platform)) is not None:
                adapter.received(message)

    async def _decide_and_dispatch(self, messages: list[InboundMessage]) -> None:
        decisions: list[IntakeDecision] = []
        try:
            while messages:
                try:
                    decisions.append(await self.parts.intake.decide(messages[0]))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the intake loop must survive any one message
                    self._quarantine(messages[0], stage="decide", error=exc)
                del messages[0]  # decided: `_in_hand` keeps only the undecided rest
        except asyncio.CancelledError:
            # Stopping: the ones decided so far are journaled here, the undecided by `_journal_queued`.
            self.parts.journal.record_many([d.message for d in decisions if d.lane_job is not None])
            raise
        entries = await self._record([decision.message for decision in decisions if decision.lane_job is not None])
        # Journaled now: a stop from here on loses nothing (the next start replays them).
        found = iter(entries)
        for decision in decisions:
            entry = next(found) if decision.lane_job is not None else None
            if isinstance(entry, DuplicateDelivery):
                log.info("intake.dropped", verdict="duplicate", reason="recorded by a replica already")
                continue
            if isinstance(entry, Exception):
                self._quarantine(decision.message, stage="journal", error=entry)
                continue
            try:
                await self._dispatch(decision, journal_entry=entry)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the intake loop must survive any one message
                self._quarantine(decision.message, stage="dispatch", error=exc, journal_entry=entry)

    async def _record(self, accepted: list[InboundMessage]) -> list[str | Exception]:
        """Journal entries for `accepted` (per message its entry or the error that kept it out)."""
        try:
            if not self._shared_journal:
                # The home's journal takes a burst in one append to a file it holds open: a few
                # microseconds a message, less than the worker-thread hop that would carry it.
                return self.parts.journal.record_many(accepted)
            writing = asyncio.ensure_future(asyncio.to_thread(self.parts.journal.record_many, accepted))
            try:
                return await asyncio.shield(writing)
            except asyncio.CancelledError:
                self._journal_writing = writing  # `stop` waits for it: the thread finishes the files
                raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - each message is quarantined with this error
            return [exc for _ in accepted]

    async def _replay(self, entry: str, message: InboundMessage) -> None:
        """Re-run a journaled message (at start, or taken over); one that fails again is quarantined, never replayed forever."""
        try:
            decision = await self.parts.intake.decide(message, replay=True)
            await self._dispatch(decision, journal_entry=entry, resumed=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad entry must not stop the start
            self._quarantine(message, stage="dispatch", error=exc, journal_entry=entry)

    def _quarantine(self, message: InboundMessage, *, stage: Stage, error: BaseException,
                    journal_entry: str | None = None) -> None:
        """Set `message` aside as a dead letter (one error line); it leaves the journal only once stored."""
        letter = self.parts.deadletters.put(message, stage=stage, error=error)
        log.error("intake.dead_lettered", stage=stage, error=letter.error, deadletter=letter.id,
                  platform=message.platform, stored=letter.stored, exc_info=error)
        self.parts.bus.publish(DeadLettered(stage, message.platform, letter.error))
        if letter.stored and journal_entry is not None:
            self.parts.journal.done(journal_entry)

    async def _journal_queued(self) -> None:
        """Messages still in the queue (or taken but not yet decided) at shutdown are journaled for the next start."""
        writing, self._journal_writing = self._journal_writing, None
        if writing is not None:
            with contextlib.suppress(Exception):
                await writing
        in_hand, self._in_hand = self._in_hand, []
        while in_hand or not self.queue.empty():
            message = normalize_inbound(in_hand.pop(0) if in_hand else self.queue.get_nowait())
            try:
                decision = await self.parts.intake.decide(message)
                if decision.lane_job is not None:
                    self.parts.journal.record(message)
            except Exception as exc:  # noqa: BLE001 - stopping goes on; the message is kept as a dead letter
                self._quarantine(message, stage="journal", error=exc)

    async def _dispatch(self, decision: IntakeDecision, *, journal_entry: str | None = None, resumed: bool = False) -> None:
        self.decisions[decision.verdict] = self.decisions.get(decision.verdict, 0) + 1
        message, where = decision.message, decision.route
        if decision.verdict in ("duplicate", "deny", "ignore") or where is None:
            log.debug("intake.dropped", verdict=decision.verdict, reason=decision.reason)
            if decision.verdict == "refuse":
                await self.parts.delivery.send_text(message.target, decision.reply or REFUSAL_TEXT)
            if journal_entry is not None:
                self.parts.journal.done(journal_entry)
            return
        if kept("intake.accepted"):
            log.info("intake.accepted", platform=message.platform, verdict=decision.verdict,
                     message_id=message.message_id, resumed=resumed)
        self.parts.bus.publish(MessageAccepted(message.platform, decision.verdict))
        command = decision.trigger.command if decision.trigger else None
        refusal = admin_refusal(command, message, self.parts.policy) if command and self.parts.policy else None
        if refusal is not None:
            log.info("command.refused", command=command.name if command else None, reason="not an admin")
            await self.parts.delivery.send_text(where.target, refusal)
            if journal_entry is not None:
                self.parts.journal.done(journal_entry)
            return
        if command is not None and command.immediate:
            self._side_task(self._command(command, message, where))
            if journal_entry is not None:
                self.parts.journal.done(journal_entry)
            return
        kind = decision.lane_job
        if kind is None:  # a verdict that routes nowhere (handled above); never queued
            return
        if message.edited:
            # The edit's own journal entry goes with the merged job: after a crash the original and then the
            # edit (as an "[edited]" line) are replayed, so the edit is never lost.
            edit_entry = (journal_entry,) if journal_entry is not None else ()
            merged = self.lanes.replace_queued(
                where.key, message.message_id,
                lambda job: dataclasses.replace(job, message=merge_edit(job.message, message),
                                                also_entries=job.also_entries + edit_entry),
            )
            if merged is not None:
                log.info("intake.edit_merged", message_id=message.message_id)
                self._texts.remember(merged.message)
                return
            if message.previous_text is None:
                message = dataclasses.replace(message, previous_text=self._texts.earlier(message))
        self._texts.remember(message)
        entry = journal_entry or self.parts.journal.record(message)
        job = Job(kind=kind, message=message, route=where, command=command, journal_entry=entry,
                  accepted_at=time.time(), resumed=resumed)
        result = self.lanes.submit(job)
        if kind == "turn" and self.parts.runner.reactions is not None and not resumed:
            self._side_task(self.parts.runner.reactions.mark(message, "received"))
        if kind == "turn" and result.interrupted is not None:
            self._forget(result.interrupted)
            await self.parts.delivery.send_text(where.target, INTERRUPTED_TEXT)
        elif kind != "record" and result.busy:
            await self.queued_notices.busy(where.key, where.target, result.position)
        elif kind != "record":
            self.queued_notices.idle(where.key)

    def _forget(self, job: Job | None) -> None:
        """A job the user stopped is not re-run after a restart."""
        if job is not None and job.journal_entry is not None:
            self.parts.journal.done(job.journal_entry)

    def _side_task(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a command failure is logged, never raised
                log.exception("command.failed", error=type(exc).__name__)

        task = asyncio.create_task(run())
        self._side.add(task)
        task.add_done_callback(self._side.discard)

    # commands handled at once -------------------------------------------------------

    async def _command(self, command: Command, message: InboundMessage, where: Route) -> None:
        delivery = self.parts.delivery
        if command.name == "help":
            text = HELP_TEXT
        elif command.name == "stop":
            stopped = self.lanes.stop(where.key)
            self._forget(stopped)
            text = "stopped." if stopped is not None else "nothing to stop."
            if self.lanes.queued(where.key):
                text += f" {self.lanes.queued(where.key)} queued message(s) will still be answered."
        elif command.name == "status":
            text = render_status(await self._status(where))
        elif command.name == "forget":
            text = await self._forget_notes(command, message, where)
        elif command.name == "whoami":
            admins = self.parts.policy.admins(message.platform) if self.parts.policy is not None else frozenset()
            text = whoami_text(message, admins=admins)
        elif command.name in ("model", "usage", "undo") and self.parts.chat_commands is not None:
            context = CommandContext(message=message, route=where, busy=self.lanes.busy(where.key))
            text = await self.parts.chat_commands.run(command, context)
        elif command.name == "memory":
            notes = self.parts.notes_text
            text = await asyncio.to_thread(notes, where.chat_scope) if notes else "notes are turned off here."
        elif command.name in ("model", "usage", "undo"):
            text = f"/{command.name} is not available here."
        else:  # new / reset
            self._forget(self.lanes.stop(where.key))
            await self.parts.sessions.reset(where)
            text = NEW_TEXT
        await delivery.send_text(where.target, text)

    async def _forget_notes(self, command: Command, message: InboundMessage, where: Route) -> str:
        notes = self.parts.notes
        if notes is None:
            return "notes are turned off here."
        policy = self.parts.policy
        admin = policy is not None and message.user_id in policy.admins(message.platform)
        return await asyncio.to_thread(forget_notes, notes, where, message.user_id, command.args, admin=admin)

    async def _status(self, where: Route) -> StatusInfo:
        agent = self.parts.agents.peek(where)
        if agent is None:
            agent = await self.parts.agents.get(where)
        engine = agent.engine
        reported = engine.state.last_prompt_tokens
        tokens = reported if reported > 0 else estimate_history_tokens(agent.history)
        return StatusInfo(
            session_key=where.key,
            messages=len(agent.history),
            tokens_used=tokens,
            tokens_source="reported" if reported > 0 else "estimate",
            threshold=engine.threshold_tokens,
            context_length=engine.context_length,
            compressions=engine.state.compression_count,
            busy=self.lanes.busy(where.key),
            queued=self.lanes.queued(where.key),
            blocked=engine.state.blocked_until > time.time(),
            prompt_source=agent.state.marks.prompt_source or "default",
            model=self.parts.agents.model_of(where.key),
            window_note=self._window_note(),
        )

    def _window_note(self) -> str:
        windows = self.parts.windows
        if windows is None:
            return ""
        active, window = windows.active, windows.active_window()
        fallback = "" if active == windows.main else f"answering with fallback {active.name}; "
        if window >= active.context_length:
            return fallback.removesuffix("; ")
        return f"{fallback}model window {window:,} (learned from its errors; configured {active.context_length:,})"

    # replies left pending -----------------------------------------------------------

    async def _resend_loop(self) -> None:
        while True:
            try:
                await self.parts.delivery.resend_pending(older_than=RESEND_INTERVAL)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - retried on the next tick
                log.warning("delivery.resend_failed", error=type(exc).__name__)
            await asyncio.sleep(RESEND_INTERVAL)  # a retry timer

    async def _lease_loop(self) -> None:
        """Renew this replica's journal leases, three times per lease (apart from takeovers, so never delayed by them)."""
        journal = self.parts.journal
        assert isinstance(journal, SharedJournal)
        loop = asyncio.get_running_loop()
        # A thread of its own: behind a busy default executor a renewal could come after the lease ran out.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal-lease") as leases:
            rounds = 0
            while True:
                await asyncio.sleep(journal.lease_seconds / 3)  # a renewal timer
                try:
                    await loop.run_in_executor(leases, journal.renew)
                    self.journal_backlog = await loop.run_in_executor(leases, journal.backlog)
                    rounds += 1
                    if rounds % PRUNE_EVERY == 0:
                        await loop.run_in_executor(leases, journal.prune)
                except Exception as exc:  # noqa: BLE001 - retried on the next tick
                    log.warning("journal.renew_failed", error=type(exc).__name__)

    async def _takeover_loop(self) -> None:
        """Take over the journal entries of replicas that died (their leases ran out) and run them here."""
        journal = self.parts.journal
        assert isinstance(journal, SharedJournal)
        while True:
            await asyncio.sleep(journal.lease_seconds / 3)  # a polling timer: expiry is seen within a third of a lease
            try:
                taken = await asyncio.to_thread(journal.take_expired, limit=TAKEOVER_BATCH)
            except Exception as exc:  # noqa: BLE001 - retried on the next tick
                log.warning("journal.takeover_failed", error=type(exc).__name__)
                continue
            for item in taken:
                message = normalize_inbound(item.message)
                if item.takeovers > MAX_TAKEOVERS:
                    error = RuntimeError(f"its replica died {item.takeovers} times while running it")
                    self._quarantine(message, stage="dispatch", error=error, journal_entry=item.entry)
                else:
                    await self._replay(item.entry, message)

    async def _index_loop(self) -> None:
        while True:
            await asyncio.sleep(INDEX_COMPACT_INTERVAL)  # a maintenance timer
            try:
                steps = await asyncio.to_thread(self.parts.store.compact_index)
                log.debug("store.index_compacted", steps=steps)
            except Exception as exc:  # noqa: BLE001 - retried on the next tick
                log.warning("store.index_compact_failed", error=type(exc).__name__)


__all__ = ["Gateway", "GatewayParts", "Resource"]
