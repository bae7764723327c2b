"""Intake: from an adapter's queue to a decision about each inbound message.

Owns `IntakeDecision` and `Intake.decide`: de-duplicate by the platform
delivery id across processes (`Deduplicator.claim`), check the platform's
allowlist, route to a session, and apply the trigger rules. Each decision is
a frozen value with a `reason`; the gateway acts on it. Binds `platform`,
`chat_id` and `session_key` to the log context. Knows nothing of agents.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

import structlog
from structlog.contextvars import bind_contextvars

from adapters.base import InboundMessage
from gateway.chats.pairing import PairingStore
from gateway.chats.policy import ChatPolicy
from gateway.commands.spec import Command
from gateway.commands.table import COMMANDS
from gateway.coord.base import Deduplicator
from gateway.i18n import Phrase, language_for, say
from gateway.intake.allowlist import LOCAL_PLATFORMS, AccessDecision, AccessRules, RefusalLimiter, check_access
from gateway.intake.bots import BotLoopGuard, BotsMode, bot_refusal
from gateway.intake.queueing import JobKind
from gateway.intake.routing import Route, chat_scope, route
from gateway.intake.triggers import GroupTrigger, TriggerDecision, decide_trigger, observes_unmentioned
from gateway.ops.events import EventBus, SenderRefused
from gateway.ops.logs import bind_message_context
from gateway.schedules.jobs import OPERATOR

log = structlog.get_logger(__name__)

Verdict: TypeAlias = Literal["duplicate", "refuse", "deny", "ignore", "record", "respond", "command"]


@dataclass(frozen=True, slots=True)
class IntakeSettings:
    profile: str
    group_sessions_per_user: bool
    group_trigger: GroupTrigger
    record_unmentioned: bool
    unknown_sender: Literal["refuse", "silent"]
    require_mention: Mapping[str, bool]  # per platform
    allow_bots: BotsMode = "none"
    edits: Literal["follow", "ignore"] = "follow"
    bot_max_replies: int = 10
    bot_window_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class IntakeDecision:
    verdict: Verdict
    reason: str
    message: InboundMessage
    route: Route | None = None
    trigger: TriggerDecision | None = None
    reply: Phrase | None = None  # what a refusal says instead of the allowlist text (a pairing code)

    @property
    def command(self) -> Command | None:
        return self.trigger.command if self.trigger else None

    @property
    def lane_job(self) -> JobKind | None:
        """The job this decision queues on its session's lane (so the message is journaled first), or None.

        The one place that says so: intake, the burst journal and shutdown all ask here.
        """
        if self.verdict in ("duplicate", "deny", "ignore", "refuse") or self.route is None:
            return None
        command = self.command
        if command is not None and COMMANDS.spec(command).immediate:
            return None
        if self.verdict == "record":
            return "record"
        return "command" if command is not None else "turn"


class Intake:
    """Decides what happens to each inbound message.

    Args:
        dedup: the cross-process de-duplicator.
        rules: access rules by platform (a platform without rules is denied).
        settings: routing and trigger settings.
        refusals: rate limit of refusals per unknown sender.
        policy: the running config's view of chats; when given, allowlists and `require_mention`
            (per platform, and per chat in `chats`) follow it live instead of `rules` / `settings`.
        pairing: approved senders and codes, for platforms with `pairing: true` (needs `policy`).
        bot_guard: counts replies to other bots per chat (across replicas when the backend is shared);
            None: no limit beyond `allow_bots`.
        bus: told of every sender the allowlist refuses (`SenderRefused`, for the operator's list to admit from).
    """

    def __init__(
        self,
        *,
        dedup: Deduplicator,
        rules: Mapping[str, AccessRules],
        settings: IntakeSettings,
        refusals: RefusalLimiter | None = None,
        policy: ChatPolicy | None = None,
        pairing: PairingStore | None = None,
        bot_guard: BotLoopGuard | None = None,
        bus: EventBus | None = None,
    ) -> None:
        self._dedup = dedup
        self._rules = rules
        self.settings = settings
        self._refusals = refusals or RefusalLimiter()
        self._policy = policy
        self._pairing = pairing
        self._bot_guard = bot_guard
        self._bus = bus

    def _access_rules(self, platform: str) -> AccessRules | None:
        if self._policy is not None and platform not in LOCAL_PLATFORMS:
            return self._policy.access_rules(platform)
        return self._rules.get(platform)

    def _pairs(self, message: InboundMessage) -> bool:
        """Pairing applies: a DM on a platform with `pairing: true`."""
        return (
            self._pairing is not None and self._policy is not None and message.chat_type == "dm"
            and self._policy.pairing(message.platform)
        )

    async def _still_admitted(self, message: InboundMessage) -> bool:
        """The sender passes the allowlist now, or was approved by pairing (no code is sent from here)."""
        if check_access(message, self._access_rules(message.platform)).allowed:
            return True
        return self._pairs(message) and self._pairing is not None and await asyncio.to_thread(
            self._pairing.is_approved, message.platform, message.user_id)

    async def _pair(self, message: InboundMessage) -> IntakeDecision | None:
        """None when the sender was approved; else the code to send (rate-limited) or a silent deny."""
        store = self._pairing
        assert store is not None
        if await asyncio.to_thread(store.is_approved, message.platform, message.user_id):
            return None
        if self._refusals.should_refuse(message.platform, message.user_id):
            code = await asyncio.to_thread(store.code_for, message.platform, message.user_id, message.user_name)
            if code is not None:
                log.info("pairing.code_issued", platform=message.platform, user_id=message.user_id)
                language = language_for(self._policy.config if self._policy is not None else None,
                                        chat_scope(message.platform, message.chat_id), message.language)
                text = say(language, "access.pairing", code=code.code, platform=message.platform)
                return IntakeDecision("refuse", "unknown sender: pairing code sent", message, reply=text)
        return IntakeDecision("deny", "unknown sender: pairing pending", message)

    def _require_mention(self, message: InboundMessage) -> bool:
        default = self.settings.require_mention.get(message.platform, True)
        if self._policy is None:
            return default
        override = self._policy.require_mention(message.platform, chat_scope(message.platform, message.chat_id))
        return override if override is not None else self._policy.platform_require_mention(message.platform, default)

    def _per_user(self, message: InboundMessage) -> bool:
        """`chats."…".session_scope` (live), else `gateway.group_sessions_per_user`."""
        if self._policy is None:
            return self.settings.group_sessions_per_user
        chat = self._policy.chat(chat_scope(message.platform, message.chat_id))
        if chat is not None and chat.session_scope is not None:
            return chat.session_scope == "per_user"
        return self._policy.config.gateway.group_sessions_per_user

    def _gateway_value(self, name: str, default: str) -> str:
        """A `gateway.*` key as the running config says (live), else the value given at start."""
        if self._policy is None:
            return default
        return str(getattr(self._policy.config.gateway, name))

    def _observes_unmentioned(self) -> bool:
        if self._policy is None:
            return self.settings.record_unmentioned
        gw = self._policy.config.gateway
        return observes_unmentioned(observe_unmentioned=gw.observe_unmentioned, record_unmentioned=gw.record_unmentioned)

    def _bot_rules(self) -> tuple[BotsMode, int, float]:
        """`gateway.allow_bots` and `gateway.bot_loop_guard`, live when the running config is followed."""
        if self._policy is not None:
            gw = self._policy.config.gateway
            return gw.allow_bots, gw.bot_loop_guard.max_replies, gw.bot_loop_guard.window_seconds
        s = self.settings
        return s.allow_bots, s.bot_max_replies, s.bot_window_seconds

    async def decide(self, message: InboundMessage, *, replay: bool = False) -> IntakeDecision:
        """Decide one message; `replay` skips de-duplication (a journaled message was claimed already)."""
        bind_message_context(platform=message.platform, chat_id=message.chat_id)
        if not replay and not await self._dedup.claim(message.dedup_key):
            return IntakeDecision("duplicate", f"delivery {message.dedup_key} already claimed", message)
        if message.scheduled:
            return await self._scheduled(message)
        access = check_access(message, self._access_rules(message.platform))
        if not access.allowed and self._pairs(message):
            pairing = await self._pair(message)
            if pairing is not None:
                return pairing
            access = AccessDecision(True, "paired sender")
        if not access.allowed:
            if self._bus is not None:
                self._bus.publish(SenderRefused(message.platform, message.user_id, message.user_name, message.chat_id))
            if self.settings.unknown_sender == "refuse" and self._refusals.should_refuse(
                message.platform, message.user_id
            ):
                return IntakeDecision("refuse", access.reason, message)
            return IntakeDecision("deny", access.reason, message)
        where = route(message, profile=self.settings.profile, group_sessions_per_user=self._per_user(message))
        bind_contextvars(session_key=where.key)  # platform and chat id are bound above
        allow_bots, max_replies, window = self._bot_rules()
        refused = bot_refusal(message, allow_bots)
        if refused is not None:
            return IntakeDecision("ignore", refused, message, route=where)
        if message.edited and self._gateway_value("edits", self.settings.edits) == "ignore":
            log.info("intake.edit_ignored", message_id=message.message_id, reason="gateway.edits: ignore")
            return IntakeDecision("ignore", "an edit (gateway.edits: ignore)", message, route=where)
        trigger = decide_trigger(
            message,
            group_trigger=self.settings.group_trigger,
            require_mention=self._require_mention(message),
            record_unmentioned=self._observes_unmentioned(),
        )
        verdict: Verdict = trigger.action
        if verdict == "respond" and message.sender_is_bot and self._bot_guard is not None and not replay:
            if not await self._bot_guard.allows(message, max_replies=max_replies, window_seconds=window):
                log.info("intake.bot_loop_guard", max_replies=max_replies, window_seconds=window)
                return IntakeDecision("ignore", "bot loop guard: too many replies to bots here", message, route=where)
        return IntakeDecision(verdict, trigger.reason, message, route=where, trigger=trigger)

    async def _scheduled(self, message: InboundMessage) -> IntakeDecision:
        """A scheduled job's turn: answered in its chat's session, never read as a command. A user's job runs only
        while its owner may still talk to the bot there (taken off the allowlist, their jobs stop); the
        operator's always run."""
        if message.user_id != OPERATOR and not await self._still_admitted(message):
            log.info("schedule.owner_refused", user_id=message.user_id, reason="the job's owner is no longer allowed")
            return IntakeDecision("deny", "scheduled job: its owner is no longer allowed here", message)
        where = route(message, profile=self.settings.profile, group_sessions_per_user=self._per_user(message))
        bind_contextvars(session_key=where.key)
        trigger = TriggerDecision("respond", "scheduled job")
        return IntakeDecision("respond", trigger.reason, message, route=where, trigger=trigger)


__all__ = ["Intake", "IntakeDecision", "IntakeSettings", "Verdict"]
