"""The gateway: adapters → queue → intake → per-session lanes → turns → delivery.

Owns `Gateway` (explicit, repeatable `start()`/`stop()` over its parts listed
once, in order, in `_parts_in_order`; the constructor only assigns) and
`GatewayParts`, the collaborators it is built from. It consumes
the adapters' shared `asyncio.Queue`, acts on each `IntakeDecision` (refuse,
record, answer, or run a command at once even while the session is busy),
journals accepted messages (through `JournalEntries`) so a restart re-runs unfinished turns, resends
pending replies from the outbox, and on `stop()` stops intake, gives turns in
flight a grace period, and leaves what did not finish in the journal/outbox.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import structlog

from adapters.base import ChatTarget, InboundMessage, PlatformAdapter
from adapters.normalize import normalize_inbound
from agent.memory import NotesStore
from agent.model_windows import ModelWindows
from agent.store import SessionStore
from agent.tools.mcp import McpHub
from gateway.adapter_set import RunningAdapters
from gateway.approvals.commands import ApprovalDesk
from gateway.chats.pairing import PairingStore
from gateway.chats.policy import ChatPolicy
from gateway.chats.store import ChatStore
from gateway.commands.calls import CommandCall
from gateway.commands.chat import ChatCommands
from gateway.commands.host import LaneHost
from gateway.commands.spec import Command, Immediate
from gateway.commands.status import ActivePlugins
from gateway.commands.table import COMMANDS
from gateway.coord import Coordinator
from gateway.coord.base import OutboundItem, Outbox
from gateway.delivery.outbound import Delivery
from gateway.delivery.outbox_file import JournaledOutbox
from gateway.delivery.queued import QueuedNotices
from gateway.i18n import Phrase, language_for, say, say_n
from gateway.intake.busy import BusyRules, Timers
from gateway.intake.deadletter import DeadLetterBox
from gateway.intake.decide import Intake, IntakeDecision
from gateway.intake.edits import RecentTexts, merge_edit
from gateway.intake.entries import JournalEntries
from gateway.intake.journals import MAX_TAKEOVERS, DuplicateDelivery, Journal, JournalBacklog
from gateway.intake.queueing import BusyMode, Job, SessionLanes
from gateway.intake.routing import Route
from gateway.intake.routing import chat_scope as chat_scope_of
from gateway.lifecycle import Lifecycle, Part, ShutdownErrors, on_stop, opened, started
from gateway.limits import SpendGate
from gateway.ops.events import EventBus, MessageAccepted, TaskDied
from gateway.ops.health import AdapterWatch, Readiness, StoreHealth
from gateway.ops.logs import kept
from gateway.ops.supervise import Supervisor
from gateway.platforms.web_transcript import ShowsTranscript, StoredTranscript
from gateway.rebuild import Rebuilders
from gateway.schedules.book import ScheduleBook
from gateway.schedules.desk import ScheduleDesk
from gateway.schedules.home import HomeChannel
from gateway.schedules.runner import Scheduler
from gateway.sessions.agents import AgentPool
from gateway.sessions.service import SessionService
from gateway.sessions.turns import TurnRunner
from gateway.telemetry.spans import IntakeSpans, traced_intake

log = structlog.get_logger(__name__)

RESEND_INTERVAL = 1.0
# Each store write adds a small full-text index segment; searches slow down ~3x until they are
# merged (bench/search.py), so the index is compacted in the background at this interval.
INDEX_COMPACT_INTERVAL = 300.0
# The store is pinged this often; /readyz fails once a ping does (a shared PostgreSQL may go away).
STORE_PING_INTERVAL = 5.0
STORE_PING_TIMEOUT = 3.0
ADAPTER_CHECK_INTERVAL = 1.0
CONSUME_BATCH = 256
TAKEOVER_BATCH = 64  # entries of dead replicas taken over per round (the rest wait a round)
PRUNE_EVERY = 600  # heartbeats between prunes of finished shared-journal rows
TAKEOVER_POLL = 2.0  # seconds between looks for dead replicas' work, at most (a killed one is dead at once)


class Resource(Protocol):
    """A long-lived collaborator with a symmetric lifecycle."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class GatewayParts:
    """Everything the gateway is made of (built elsewhere, without I/O)."""

    coordinator: Coordinator
    store: SessionStore
    adapters: MutableMapping[str, PlatformAdapter]  # shared with delivery: a restarted adapter replaces its entry
    agents: AgentPool
    sessions: SessionService
    bus: EventBus
    runner: TurnRunner
    delivery: Delivery
    intake: Intake
    entries: JournalEntries  # the inbound journal's entries, shared with the turn runner
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
    approvals: ApprovalDesk | None = None  # `/approve` and `/deny` (tool calls waiting for a person's yes)
    limits: SpendGate | None = None  # spend and rate limits (`/usage`, the admin API and `chorus limits` read them)
    busy_rules: BusyRules | None = None  # the busy mode per chat (live); None: `busy_mode` everywhere
    timers: Timers | None = None  # what `collect` waits on (tests inject their own clock)
    plugins: ActivePlugins | None = None  # context.engine and memory.provider in use (`/status`)
    scheduler: Scheduler | None = None  # scheduled jobs (its store opens after the session store's pool)
    home: HomeChannel | None = None  # restart and outage notices to gateway.home_channel
    schedules: ScheduleBook | None = None  # `/schedules`, `/unschedule`, the admin API
    rebuild: Rebuilders | None = None  # how parts are remade when the live config changes (`gateway/live_parts.py`)

    @property
    def journal(self) -> Journal:
        return self.entries.journal

    @property
    def deadletters(self) -> DeadLetterBox:
        return self.entries.deadletters


class Gateway:
    """One gateway process (several may share one Redis)."""

    def __init__(self, parts: GatewayParts, *, supervisor: Supervisor | None = None) -> None:
        self.parts = parts
        self.supervisor = supervisor or Supervisor(on_death=lambda task, error: parts.bus.publish(TaskDied(task, error)))
        self.queued_notices = QueuedNotices(parts.delivery, text=lambda language, n: say_n(language, "queue.queued", n))
        self.queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
        self.entries = parts.entries
        self.lanes = self._new_lanes()
        self._side: set[asyncio.Task[None]] = set()
        self.shutdown_grace = parts.shutdown_grace  # `gateway.shutdown_grace_seconds`, live
        self._store_open = False
        self._life = Lifecycle("Gateway")
        self._closing = ShutdownErrors()
        self.adapters = RunningAdapters(parts.adapters, lambda: self.queue, self._closing)
        self.decisions: dict[str, int] = {}
        self.store_health = StoreHealth()
        self.adapter_watch = AdapterWatch()
        self.journal_backlog: JournalBacklog | None = None  # the shared journal's, as of the last lease round
        self._texts = RecentTexts()  # what an edit changed, when its platform does not say
        for adapter in parts.adapters.values():
            if isinstance(adapter, ShowsTranscript):  # the web chat: its pages show the stored session
                adapter.transcript = StoredTranscript(parts.store, profile=parts.intake.settings.profile,
                                                      waiting=self._waiting_messages)

        self.resumed = 0  # journaled messages of an earlier run answered at this start (the home channel's notice)
        if parts.scheduler is not None:
            parts.scheduler.bind(self)
        if parts.home is not None:
            parts.home.bind(self.notify)

    def _waiting_messages(self, key: str) -> list[InboundMessage]:
        """The user's messages of a session not answered yet (running or queued turns; not commands)."""
        return [job.message for job in self.lanes.waiting(key) if job.kind == "turn" and job.command is None]

    def _new_lanes(self) -> SessionLanes:
        parts = self.parts
        lanes = SessionLanes(parts.runner.run, mode=parts.busy_mode, rules=parts.busy_rules, timers=parts.timers)
        parts.runner.steering = lanes.take_steerable  # steer mode: a running turn takes queued messages
        return lanes

    # lifecycle ----------------------------------------------------------------

    def _parts_in_order(self) -> list[Part]:
        """Every part in start order, each one start paired with its cleanup; `stop` runs the cleanups in reverse."""
        p, closing = self.parts, self._closing
        return [
            self._session_store,
            # Chats and pairing close before the session store: on PostgreSQL they borrow its pool.
            *(partial(opened, store.open, store.close) for store in (p.chats, p.pairing) if store is not None),
            *((partial(opened, p.scheduler.store.open, p.scheduler.store.close),) if p.scheduler is not None else ()),
            partial(opened, p.journal.open, p.journal.close, in_thread=False),
            partial(started, p.coordinator.start, p.coordinator.stop),
            self._outbox,
            partial(on_stop, self._close_closers),
            *(partial(started, r.start, r.stop, errors=closing, what=f"resource {type(r).__name__}") for r in p.resources),
            # Messages that arrive while the adapters stop are kept for the next start.
            partial(on_stop, self._keep_unfinished),
            self.adapters.part,
            *((partial(on_stop, partial(closing.run, "on_shutdown", p.on_shutdown)),) if p.on_shutdown else ()),
            self._session_lanes,
            self._journal_replay,
            self._background_loops,
        ]

    async def start(self) -> None:
        """Start every part in order (a part that fails stops those before it, and the error is raised)."""
        try:
            await self._life.start(self._parts_in_order())
        finally:
            self._closing.log()  # failures of parts stopped again because a later one could not start

    async def stop(self) -> None:
        """Stop intake, let turns finish within the grace period, persist the rest, close everything."""
        if not self._life.running:
            return
        try:
            await self._life.stop()
        finally:
            self._closing.log()
        log.info("gateway.stopped")

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    @asynccontextmanager
    async def _session_store(self) -> AsyncIterator[None]:
        async with opened(self.parts.store.open, self.parts.store.close):
            self._store_open = True
            try:
                yield
            finally:
                self._store_open = False

    @asynccontextmanager
    async def _outbox(self) -> AsyncIterator[None]:
        outbox = self.parts.outbox
        if not isinstance(outbox, JournaledOutbox):
            yield
            return
        if restored := await outbox.restore():
            log.info("outbox.restored", pending=restored)
        try:
            yield
        finally:
            outbox.close()

    async def _close_closers(self) -> None:
        for index, close in enumerate(self.parts.closers):
            await self._closing.run(f"closer {index}", close)

    async def restart_adapter(
        self, name: str, build: Callable[[], PlatformAdapter | None], *, redact: Callable[[str], str] = str
    ) -> None:
        """Replace platform `name`'s adapter after its keys changed (`RunningAdapters.restart`)."""
        await self.adapters.restart(name, build, redact=redact)

    @asynccontextmanager
    async def _session_lanes(self) -> AsyncIterator[None]:
        """Jobs run from here on; stopping gives them the grace period, then persists what a cancelled one changed."""
        self.lanes = self._new_lanes()
        try:
            yield
        finally:
            unfinished = await self.lanes.drain(self.shutdown_grace)
            if unfinished:
                log.warning("gateway.unfinished_jobs", jobs=len(unfinished), kept_in="journal")
            # A cancelled turn's history append and state save still finish before the store closes.
            try:
                async with asyncio.timeout(max(1.0, self.shutdown_grace)):
                    await self.parts.sessions.settle()
            except TimeoutError:
                log.warning("gateway.persist_unfinished", kept_in="journal")
            for task in list(self._side):
                task.cancel()
            await asyncio.gather(*self._side, return_exceptions=True)
            await self.queued_notices.close()

    @asynccontextmanager
    async def _journal_replay(self) -> AsyncIterator[None]:
        """Messages a previous run accepted and did not finish are run again (before new ones are taken)."""
        for entry, message in self.parts.journal.recover():
            log.info("journal.replay", platform=message.platform, chat_id=message.chat_id)
            await self._replay(entry, normalize_inbound(message))
            self.resumed += 1
        if self.parts.home is not None:
            self._side_task(self.parts.home.started(resumed=self.resumed))
        yield

    @asynccontextmanager
    async def _background_loops(self) -> AsyncIterator[None]:
        """Intake and the maintenance loops; stopping them keeps what was taken or still queued for the next start."""
        loops: dict[str, Callable[[], Awaitable[None]]] = {
            "gateway-intake": self._consume, "gateway-resend": self._resend_loop, "gateway-index": self._index_loop,
            "gateway-store-watch": self._store_watch, "gateway-adapter-watch": self._adapter_watch,
        }
        if self.entries.shared is not None:
            loops |= {"gateway-leases": self._lease_loop, "gateway-takeover": self._takeover_loop}
        if self.parts.scheduler is not None:
            loops["gateway-scheduler"] = self.parts.scheduler.loop
        if self.parts.home is not None:
            loops["gateway-home-channel"] = self.parts.home.loop
        for name, loop in loops.items():
            self.supervisor.start(name, loop)
        try:
            yield
        finally:
            await self.supervisor.stop()
            await self._keep_unfinished()

    async def _keep_unfinished(self) -> None:
        """Messages still queued (or taken but not yet decided) are journaled for the next start."""
        await self.entries.keep_unfinished(self.queue, self._joins_lane)

    async def _joins_lane(self, message: InboundMessage) -> bool:
        return (await self.parts.intake.decide(message)).lane_job is not None

    async def readiness(self) -> Readiness:
        adapters_ok = self.adapters.all_started
        receiving = AdapterWatch.reasons(self.adapter_watch.check(self.parts.adapters)) if adapters_ok else []
        store_ok = self._store_open and self.store_health.ok
        down = self.supervisor.down
        reasons = [task.reason for task in down]
        reasons.extend(self.adapters.failure_reasons())
        if self._store_open and not store_ok:
            reasons.append("the session store did not answer its last ping")
        writes = self.parts.runner.store_writes
        if not writes.ok:
            store_ok = False
            reasons.append(writes.reason())
        if receiving:
            adapters_ok = False
            reasons.extend(receiving)
        # A shared coordination backend is fail-open (`gateway/coord/failopen.py`): while Redis is down this process
        # answers from its own memory. It stays ready when the shared store's locks still keep one turn per session
        # (`coordination` says "degraded: …"); without them it is not, and `coordination` names why.
        exclusive, coordination = self.parts.coordinator.state()
        if not exclusive:
            reasons.append(f"coordination {coordination}")
        return Readiness(
            store_open=store_ok, coordinator=exclusive, adapters_started=adapters_ok,
            background_tasks=not down, detail="; ".join(reasons), coordination=coordination,
        )

    async def _adapter_watch(self) -> None:
        """Read every adapter's liveness each second: a receive that stopped is logged when it stops, not at a probe."""
        while True:
            await asyncio.sleep(ADAPTER_CHECK_INTERVAL)  # a check timer
            found = self.adapter_watch.check(self.parts.adapters)
            if self.parts.home is not None:
                self.parts.home.adapters({name: report.detail or "down" for name, report in found.items()
                                          if not report.alive})

    async def ping_store(self) -> StoreHealth:
        """Ping the session store once and record the outcome in `store_health`."""
        started = time.monotonic()
        previous = self.store_health
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation that lands as the
            # ping's thread finishes, and this watch then pinged on while a SIGTERM waited for it (a stop hang).
            async with asyncio.timeout(STORE_PING_TIMEOUT):
                await asyncio.to_thread(self.parts.store.ping)
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
            if (task := asyncio.current_task()) is not None and task.cancelling():
                raise asyncio.CancelledError  # a stop asked while the ping ran: never ping on past it

    # intake -------------------------------------------------------------------

    async def _consume(self) -> None:
        self.entries.set_aside_in_hand()  # left by an intake loop that died
        while True:
            # Take what is waiting (a burst of chats), so its journal entries are written in one
            # call (one append to the home's file, or one trip to the shared journal's database).
            messages = [normalize_inbound(await self.queue.get())]
            while len(messages) < CONSUME_BATCH and not self.queue.empty():
                messages.append(normalize_inbound(self.queue.get_nowait()))
            self.entries.take(messages)  # emptied as they are decided; a stop journals what is left
            await self._consume_batch(messages)

    async def _consume_batch(self, messages: list[InboundMessage]) -> None:
        if not self.adapters.receipts:
            await self._decide_and_dispatch(messages)
            return
        batch = list(messages)  # `_decide_and_dispatch` consumes the list
        await self._decide_and_dispatch(messages)
        for message in batch:  # recorded (or not needing it): a waiting webhook may answer now
            if (adapter := self.adapters.receipts.get(message.platform)) is not None:
                adapter.received(message)

    async def _decide_and_dispatch(self, messages: list[InboundMessage]) -> None:
        with traced_intake(messages) as spans:  # each message stamped with its trace, journaled with it
            await self._decide_and_dispatch_traced(messages, spans)

    async def _decide_and_dispatch_traced(self, messages: list[InboundMessage], spans: IntakeSpans) -> None:
        decisions: list[IntakeDecision] = []
        try:
            while messages:
                try:
                    decisions.append(await self.parts.intake.decide(messages[0]))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the intake loop must survive any one message
                    self.entries.dead_letter(messages[0], stage="decide", error=exc)
                del messages[0]  # decided: what is in hand keeps only the undecided rest
        except asyncio.CancelledError:
            # Stopping: the ones decided so far are journaled here, the undecided by `keep_unfinished`.
            self.entries.record_decided([d.message for d in decisions if d.lane_job is not None])
            raise
        entries = await self.entries.record([d.message for d in decisions if d.lane_job is not None])
        # Journaled now: a stop from here on loses nothing (the next start replays them).
        found = iter(entries)
        for decision in decisions:
            spans.decided(decision.message, decision.verdict)
            entry = next(found) if decision.lane_job is not None else None
            if isinstance(entry, DuplicateDelivery):
                log.info("intake.dropped", verdict="duplicate", reason="recorded by a replica already")
                continue
            if isinstance(entry, Exception):
                self.entries.dead_letter(decision.message, stage="journal", error=entry)
                continue
            try:
                await self._dispatch(decision, journal_entry=entry)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the intake loop must survive any one message
                self.entries.dead_letter(decision.message, stage="dispatch", error=exc, entry=entry)

    async def _replay(self, entry: str, message: InboundMessage) -> None:
        """Re-run a journaled message (at start, or taken over); one that fails again is quarantined, never replayed forever."""
        try:
            decision = await self.parts.intake.decide(message, replay=True)
            await self._dispatch(decision, journal_entry=entry, resumed=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad entry must not stop the start
            self.entries.dead_letter(message, stage="dispatch", error=exc, entry=entry)

    async def _dispatch(self, decision: IntakeDecision, *, journal_entry: str | None = None, resumed: bool = False) -> None:
        self.decisions[decision.verdict] = self.decisions.get(decision.verdict, 0) + 1
        message, where = decision.message, decision.route
        if decision.verdict in ("duplicate", "deny", "ignore") or where is None:
            log.debug("intake.dropped", verdict=decision.verdict, reason=decision.reason)
            if decision.verdict == "refuse":
                # The operator admits a sender by id: the line names it, and so does the log (once per interval).
                log.info("allowlist.refused", platform=message.platform, user_id=message.user_id,
                         user_name=message.user_name, chat_id=message.chat_id)
                refusal = decision.reply or say(self.language(message), "access.refused", user_id=message.user_id)
                await self.parts.delivery.send_notice(message.target, refusal)
            self.entries.done(journal_entry)
            return
        if kept("intake.accepted"):
            log.info("intake.accepted", platform=message.platform, verdict=decision.verdict,
                     message_id=message.message_id, resumed=resumed)
        self.parts.bus.publish(MessageAccepted(message.platform, decision.verdict))
        command = decision.command
        if command is not None and await self._command_at_once(command, message, where):
            self.entries.done(journal_entry)
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
        entry = journal_entry or self.entries.record_one(message)
        job = Job(kind=kind, message=message, route=where, command=command, journal_entry=entry,
                  accepted_at=time.time(), resumed=resumed, language=self.language(message, where.chat_scope))
        result = self.lanes.submit(job)
        if kind == "turn" and self.parts.runner.reactions is not None and not resumed:
            self._side_task(self.parts.runner.reactions.mark(message, "received"))
        if kind == "turn" and result.interrupted is not None:
            self.entries.forget(result.interrupted)
            await self.parts.delivery.send_notice(where.target, say(job.language, "queue.interrupted"))
        elif kind != "record" and result.busy:
            await self.queued_notices.busy(where.key, where.target, result.position, job.language)
        elif kind != "record":
            self.queued_notices.idle(where.key)

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

    # scheduled jobs (`JobHost`) -----------------------------------------------------

    async def run_turn(self, message: InboundMessage) -> None:
        """A scheduled job's turn: decided, journaled and queued like any platform message."""
        await self._decide_and_dispatch([normalize_inbound(message)])

    async def deliver(self, item: OutboundItem) -> None:
        await self.parts.delivery.deliver(item)

    async def notify(self, target: ChatTarget, message: Phrase) -> None:
        await self.parts.delivery.send_text(target, message)

    # commands handled at once -------------------------------------------------------

    async def _command_at_once(self, command: Command, message: InboundMessage, where: Route) -> bool:
        """Refuse an admin command to a non-admin, or start an immediate one; False: it joins the lane."""
        spec = COMMANDS.spec(command)
        policy = self.parts.policy
        language = self.language(message, where.chat_scope)
        refusal = spec.refusal(command, message, policy.admins(message.platform), language) if policy is not None else None
        if refusal is not None:
            log.info("command.refused", command=command.name, reason="not an admin")
            await self.parts.delivery.send_notice(where.target, refusal)
            return True
        if isinstance(spec.run, Immediate):
            call = CommandCall(command, message, where, self._commands_host(), language)
            self._side_task(self._command(spec.run, call, changes_history=spec.changes_history))
            return True
        return False

    async def _command(self, run: Immediate, call: CommandCall, *, changes_history: bool = False) -> None:
        text = await run.handler(call)
        if changes_history:  # /undo, /new: pages that show the stored session draw it again
            adapter = self.parts.adapters.get(call.route.target.platform)
            if isinstance(adapter, ShowsTranscript):
                await adapter.transcript_changed(call.route.target.chat_id)
        if text:  # "": answered already (a button press answered privately)
            await self.parts.delivery.send_notice(call.route.target, text)

    def language(self, message: InboundMessage, chat_scope: str | None = None) -> str:
        """The language of the gateway's own texts in answer to `message` (`gateway.i18n.language_for`)."""
        policy = self.parts.policy
        scope = chat_scope if chat_scope is not None else chat_scope_of(message.platform, message.chat_id)
        return language_for(policy.config if policy is not None else None, scope, message.language)

    def _commands_host(self) -> LaneHost:
        parts = self.parts
        policy = parts.policy
        return LaneHost(lanes=self.lanes, forget=self.entries.forget, sessions=parts.sessions, notes_text=parts.notes_text,
                        chats=parts.chat_commands, windows=parts.windows, approvals=parts.approvals, notes=parts.notes,
                        admins=policy.admins if policy is not None else lambda _platform: frozenset(),
                        plugins=parts.plugins,
                        schedules=ScheduleDesk(parts.schedules) if parts.schedules is not None else None)

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
        """This replica's heartbeat, three times per lease (apart from takeovers, so never delayed by them)."""
        journal = self.entries.shared
        assert journal is not None
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
        journal = self.entries.shared
        assert journal is not None
        while True:
            # A polling timer: a killed replica is seen on the next look, a vanished one within a lease and a look.
            await asyncio.sleep(min(journal.lease_seconds / 3, TAKEOVER_POLL))
            try:
                taken = await asyncio.to_thread(journal.take_expired, limit=TAKEOVER_BATCH)
            except Exception as exc:  # noqa: BLE001 - retried on the next tick
                log.warning("journal.takeover_failed", error=type(exc).__name__)
                continue
            for item in taken:
                message = normalize_inbound(item.message)
                if item.takeovers > MAX_TAKEOVERS:
                    error = RuntimeError(f"its replica died {item.takeovers} times while running it")
                    self.entries.dead_letter(message, stage="dispatch", error=error, entry=item.entry)
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
