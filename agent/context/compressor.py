"""`ContextCompressor`: the built-in `ContextEngine` (docs/design.md §3).

Runs the pure stages (boundaries, prune, summarise, reassemble, sanitise,
images), calls the summariser, applies the failure tiers, and keeps the
anti-thrash state in `EngineState`. Works on an immutable copy of the input
and rolls back to it (and to the previous state) on any exception. Emits
status events through the caller's sink. Knows nothing of platforms, session
stores or Redis.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import structlog

from agent.context import _antithrash as thrash
from agent.context._boundaries import Split, find_split, widen_tail
from agent.context._fallback import fallback_summary
from agent.context._handoff import (
    handoff_text,
    is_handoff,
    is_real_user,
    newest_handoff,
    strip_framing,
    strip_sections,
    without_handoff,
)
from agent.context._images import strip_old_images
from agent.context._pairing import link_tool_results
from agent.context._preflight import PreflightCosts, estimate_messages
from agent.context._prune import cap_oversized, proactive_candidates, prune_old, relieve_tail_pressure
from agent.context._reassemble import assemble, choose_role
from agent.context._sanitize import sanitize_tool_pairs
from agent.context._summarizer import FallbackOnly, Summarizer, SummaryRequest
from agent.context.engine import (
    CompressionEvent,
    CompressionResult,
    ContextEngine,
    EngineState,
    EventSink,
    SummaryKind,
    Trigger,
)
from agent.context.explain import CompressionExplain
from agent.context.sections import HandoffSection, SectionDrops, build_sections_reported, join_sections
from agent.context.thresholds import compute_threshold, summary_budget, tail_budget, threshold_ratio
from agent.messages import Message, ToolSchema
from agent.model_windows import WindowSource
from agent.settings import CompressionSettings
from agent.tokens import TokenCounter
from chorus_errors import ModelAuthError, ModelError, ModelNotConfigured, ModelUnavailable

log = structlog.get_logger(__name__)

# Triggers that anti-thrash blocks may stop; hygiene, error recovery, manual and
# offline runs are safety nets or explicit requests.
AUTOMATIC_TRIGGERS: frozenset[Trigger] = frozenset({"preflight", "post_response", "idle"})
# Preflight's cheap gate: a character count that certainly deserves a token estimate.
PREFLIGHT_CHARS_PER_TOKEN = 4
ABORT_NOTICE = "session frozen: fix the summary model settings and /compress, or start a new session"


class _Abort(Exception):
    """Control flow inside `compress`: leave the messages unchanged (failure tier 4)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Summary:
    body: str
    kind: SummaryKind
    sections: tuple[str, ...]
    drops: SectionDrops = SectionDrops()


class ContextCompressor(ContextEngine):
    """Protected head + one structured summary + the tail kept verbatim.

    Args:
        settings: the `compression.*` section.
        context_length: the main model's window in tokens.
        max_tokens: the reply reservation (`model.max_tokens`), if any.
        model: the main model's name (for `model_thresholds` and state resets).
        summarizer: produces summary bodies; None means the fallback summary only.
        counter: counts real tokens (cached per message).
        now: the clock, in epoch seconds.
        sections: deterministic handoff sections appended to every summary.
        state: persisted state to resume from (a fresh one when None).
        window: the active model's effective window, read at each use (a
            fallback or a learned smaller window changes it); None: `context_length`.
    """

    def __init__(
        self,
        settings: CompressionSettings,
        *,
        context_length: int,
        max_tokens: int | None = None,
        model: str = "",
        summarizer: Summarizer | None = None,
        counter: TokenCounter,
        now: Callable[[], float] = time.time,
        sections: Sequence[HandoffSection] = (),
        state: EngineState | None = None,
        window: WindowSource | None = None,
    ) -> None:
        self._settings = settings
        self._window = window
        self._context_length = context_length
        self._max_tokens = max_tokens
        self._model = model
        self._summarizer: Summarizer = summarizer if summarizer is not None else FallbackOnly()
        self._counter = counter
        self._preflight_costs = PreflightCosts()
        self._threshold: tuple[int, str, int] | None = None  # (window, model, threshold) last computed
        self._tools: tuple[tuple[ToolSchema, ...], int] | None = None  # the loop's schema tuple and its tokens
        self._now = now
        self._sections = tuple(sections)
        self.state = state if state is not None else EngineState(model=model)

    # ---- accounting -------------------------------------------------------

    @property
    def threshold_tokens(self) -> int:
        # Read three times a turn; it changes only with the window (learned, a fallback) or the model.
        window, model = self.context_length, self._model
        cached = self._threshold
        if cached is not None and cached[0] == window and cached[1] == model:
            return cached[2]
        ratio = threshold_ratio(model, self._settings.threshold, self._settings.model_thresholds)
        threshold = compute_threshold(
            window, ratio, max_tokens=self._max_tokens, threshold_tokens=self._settings.threshold_tokens
        )
        self._threshold = (window, model, threshold)
        return threshold

    @property
    def context_length(self) -> int:
        return self._window.active_window() if self._window is not None else self._context_length

    @property
    def tail_budget(self) -> int:
        return tail_budget(self.threshold_tokens, self._settings.target_ratio)

    @property
    def max_attempts(self) -> int:
        """Error-recovery compressions allowed in one turn."""
        return self._settings.max_attempts

    @property
    def settings(self) -> CompressionSettings:
        return self._settings

    def on_model_switch(self, model: str) -> None:
        changed = model != self.state.model
        super().on_model_switch(model)
        if changed:
            self._model = model

    # ---- when -------------------------------------------------------------

    def _tools_tokens(self, tools: Sequence[ToolSchema]) -> int:
        """The schemas' tokens; the loop passes its own tuple each request, so its total is kept for it."""
        kept = self._tools
        if kept is not None and kept[0] is tools:
            return kept[1]
        tokens = self._counter.count_tools(tools)
        if isinstance(tools, tuple):  # immutable: the same object has the same total
            self._tools = (tools, tokens)
        return tokens

    def should_compress_preflight(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> bool:
        if not self._settings.enabled:
            return False
        threshold = self.threshold_tokens
        protected = self._settings.protect_first_n + min(self._settings.protect_last_n, 8) + 1
        if len(messages) >= self._settings.hygiene_hard_message_limit:
            return thrash.block_reason(self.state, self._now()) is None  # the hard limit holds for every request
        chars, message_estimate = self._preflight_costs.totals(messages)
        if len(messages) <= protected and chars < threshold * PREFLIGHT_CHARS_PER_TOKEN // 2:
            return False
        if message_estimate + self._tools_tokens(tools) < threshold:
            return False
        if self.state.usage_fits and message_estimate < threshold:
            return False  # the real usage after the last compression proved the schemas fit
        return thrash.block_reason(self.state, self._now()) is None

    def record_usage(self, prompt_tokens: int) -> None:
        thrash.record_usage(self.state, self._now(), prompt_tokens, self.threshold_tokens)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        if not self._settings.enabled:
            return False
        tokens = self.state.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if tokens < 0:
            tokens = 0  # sentinel right after a compression: wait for the provider's reading
        if tokens < self.threshold_tokens:
            return False
        return thrash.block_reason(self.state, self._now()) is None

    def blocked_notice(self) -> CompressionEvent | None:
        """The one warning to show while automatic compression is blocked (None after the first)."""
        reason = thrash.block_reason(self.state, self._now())
        if reason is None or self.state.blocked_notice_sent:
            return None
        self.state.blocked_notice_sent = True
        return CompressionEvent("blocked", "post_response", reason=reason)

    def idle_compact_due(self, idle_seconds: float) -> bool:
        """`idle_compact_after_seconds` elapsed since the last activity (0 = off)."""
        limit = self._settings.idle_compact_after_seconds
        return self._settings.enabled and limit > 0 and idle_seconds >= limit

    # ---- how --------------------------------------------------------------

    async def compress(
        self,
        messages: Sequence[Message],
        *,
        trigger: Trigger,
        force: bool = False,
        on_event: EventSink | None = None,
    ) -> CompressionResult:
        started = time.perf_counter()
        original = tuple(messages)
        if force:
            thrash.clear_blocks(self.state)
        elif not self._settings.enabled:
            return await self._unchanged(original, trigger, "skipped", "compression is disabled", started, on_event)
        elif trigger in AUTOMATIC_TRIGGERS:
            reason = thrash.block_reason(self.state, self._now())
            if reason is not None:
                notify = not self.state.blocked_notice_sent
                self.state.blocked_notice_sent = True
                return await self._unchanged(original, trigger, "blocked", reason, started, on_event if notify else None)
        await _emit(on_event, CompressionEvent("started", trigger))
        snapshot = EngineState.from_json(self.state.to_json())
        try:
            result = await self._run(original, trigger, started)
        except _Abort as abort:
            return await self._unchanged(original, trigger, "aborted", abort.reason, started, on_event)
        except Exception as exc:  # noqa: BLE001 - rollback boundary: any failure keeps the input
            log.exception("compression.failed", trigger=trigger, error=type(exc).__name__)
            self.state = snapshot
            return await self._unchanged(
                original, trigger, "aborted", f"internal error ({type(exc).__name__}); messages unchanged", started, on_event
            )
        if result.outcome == "compressed":
            await _emit(on_event, CompressionEvent(
                "finished", trigger, result.tokens_before, result.tokens_after, facts_dropped=result.facts_dropped
            ))
        else:
            await _emit(on_event, CompressionEvent("skipped", trigger, result.tokens_before, result.tokens_after, result.reason))
        return result

    async def _unchanged(
        self,
        original: tuple[Message, ...],
        trigger: Trigger,
        outcome: Literal["skipped", "blocked", "aborted"],
        reason: str,
        started: float,
        on_event: EventSink | None,
    ) -> CompressionResult:
        if outcome == "aborted":
            log.warning("compression.aborted", trigger=trigger, reason=reason)
        await _emit(on_event, CompressionEvent(outcome, trigger, reason=reason))
        return CompressionResult(
            outcome=outcome,
            trigger=trigger,
            messages=original,
            tokens_before=0,
            tokens_after=0,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            reason=reason,
        )

    def _previous(self, original: Sequence[Message], summarised: Sequence[int]) -> int | None:
        """The newest handoff inside the span being summarised; discards a remembered summary from elsewhere.

        A remembered previous summary that no handoff in these messages carries
        belongs to another session (or a reset one) and is never used.
        """
        remembered = self.state.previous_summary
        if remembered is not None and not any(
            is_handoff(m) and handoff_text(m) == remembered for m in reversed(original)
        ):
            log.info("compression.previous_summary_discarded", reason="not in this session's messages")
            self.state.previous_summary = None
        for index in reversed(summarised):
            if is_handoff(original[index]):
                return index
        return None

    def _split(self, original: Sequence[Message]) -> Split | None:
        first = self.state.compression_count == 0 and newest_handoff(original) is None
        settings = self._settings
        split = find_split(
            original,
            protect_first_n=settings.protect_first_n if first else 0,
            budget=self.tail_budget,
            protect_last_n=settings.protect_last_n,
            min_tail_user_messages=settings.min_tail_user_messages,
            counter=self._counter,
            max_tail_messages=settings.hygiene_hard_message_limit // 2,
        )
        # A summary that would have to merge into a person's message moves the
        # boundary back instead: user words stay verbatim.
        while split.tail_start < len(original):
            before = [*original[: split.head_end], *(original[i] for i in split.pinned)]
            nxt = original[split.tail_start]
            kept_users = any(is_real_user(m) for m in before) or any(
                is_real_user(m) for m in original[split.tail_start:]
            )
            if choose_role(before[-1] if before else None, nxt, has_real_user=kept_users) is not None:
                break
            if not is_real_user(nxt):
                break
            wider = widen_tail(original, split, self._counter)
            if wider is None:
                break
            split = wider
        return split if split.summarised() else None

    async def _run(self, original: tuple[Message, ...], trigger: Trigger, started: float) -> CompressionResult:
        split = self._split(original)
        if split is None:
            thrash.record_no_gain(self.state, self._now())
            return self._skipped(original, trigger, started, "nothing to compress: every message is protected")
        links = link_tool_results(original)
        keep = frozenset(self._settings.prune_exclude_tools)
        pruned, touched = prune_old(
            original, links, end=split.tail_start, min_prune_chars=self._settings.min_prune_chars, keep=keep
        )
        tail, counts, pressure = relieve_tail_pressure(
            original[split.tail_start:], split.tail_tokens, links, offset=split.tail_start,
            budget=self.tail_budget, min_prune_chars=self._settings.min_prune_chars, counter=self._counter, keep=keep,
        )
        tail, counts, oversize = cap_oversized(
            tail, counts, offset=split.tail_start, budget=self.tail_budget, counter=self._counter
        )
        touched |= pressure | oversize
        summarised = split.summarised()
        dropped = [original[index] for index in summarised]
        previous = self._previous(original, summarised)
        summary = await self._summarise(pruned, summarised, dropped, previous)
        head = list(pruned[: split.head_end])
        pinned = [original[index] for index in split.pinned]
        has_real_user = any(is_real_user(m) for m in (*head, *pinned, *tail))
        assembly = assemble(head, tail, summary.body, has_real_user=has_real_user, pinned=pinned)
        sanitized, report = sanitize_tool_pairs(assembly.messages)
        final, images = strip_old_images(sanitized)
        tokens_before, tokens_after = self._measure(original, split, dropped, final)
        # Past the hard message limit, fewer messages is the goal even when the tokens barely move.
        shrank_count = len(original) >= self._settings.hygiene_hard_message_limit and len(final) < len(original)
        if tokens_after >= tokens_before and not (shrank_count and tokens_after < self.threshold_tokens):
            thrash.record_no_gain(self.state, self._now())
            return self._skipped(original, trigger, started, "compression would not shrink the prompt", tokens_before)
        thrash.record_compression(
            self.state, self._now(), tokens_before=tokens_before, tokens_after=tokens_after, kind=summary.kind,
            shrank_count=shrank_count,
        )
        summary_message = next((m for m in final if m.compressed_summary), None)  # sanitising may shift indices
        self.state.previous_summary = handoff_text(summary_message) if summary_message is not None else None
        replaced_idx = sorted(set(summarised) | {i for i in touched if i < split.head_end or i >= split.tail_start})
        if assembly.merged:
            replaced_idx = sorted(set(replaced_idx) | {split.tail_start})
        explain = CompressionExplain(
            roles=tuple(m.role for m in original), head_end=split.head_end, tail_start=split.tail_start,
            pinned=split.pinned, pruned={**touched, **({split.tail_start: "merged"} if assembly.merged else {})},
            summary_role=assembly.role, merged=assembly.merged, sections=summary.sections,
            dropped_tool_results=report.dropped_results, stubbed_tool_calls=report.stubbed_calls, images_stripped=images,
            fact_drops=summary.drops,
        )
        elapsed = (time.perf_counter() - started) * 1000
        if summary.drops.total:
            # Never silent: what the ledger gave up, by the policy it declares (see agent.context.ledger).
            log.warning(
                "compression.facts_dropped", trigger=trigger, superseded=len(summary.drops.superseded),
                over_budget=len(summary.drops.over_budget),
            )
        log.info(
            "compression.finished", trigger=trigger, kind=summary.kind, tokens_before=tokens_before,
            tokens_after=tokens_after, messages_before=len(original), messages_after=len(final),
            elapsed_ms=round(elapsed, 1),
        )
        return CompressionResult(
            outcome="compressed",
            trigger=trigger,
            messages=tuple(final),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            summary_kind=summary.kind,
            pruned_tool_results=sum(1 for i, kind in touched.items() if original[i].role == "tool" and kind != "arguments"),
            replaced=tuple(original[i] for i in replaced_idx),
            summary_text=summary_message.text if summary_message is not None else None,
            elapsed_ms=elapsed,
            explain=explain,
            fact_drops=summary.drops,
        )

    def _measure(
        self, original: Sequence[Message], split: Split, dropped: Sequence[Message], final: Sequence[Message]
    ) -> tuple[int, int]:
        """Tokens before and after: real for what stays, an estimate for what was dropped.

        The dropped span is never tokenised (that would cost as much as the
        whole compression); only when the saving is thin, and the estimate's
        error could matter, is the exact figure computed.
        """
        tokens_after = self._counter.count_messages(final)
        kept = sum(self._counter.count_message(m) for m in original[: split.head_end])
        kept += sum(split.tail_tokens) + sum(self._counter.count_message(original[i]) for i in split.pinned)
        tokens_before = kept + estimate_messages(dropped) + 3
        if tokens_after * 2 > tokens_before:
            tokens_before = self._counter.count_messages(original)
        return tokens_before, tokens_after

    def _skipped(
        self, original: tuple[Message, ...], trigger: Trigger, started: float, reason: str, tokens: int = 0
    ) -> CompressionResult:
        return CompressionResult(
            outcome="skipped", trigger=trigger, messages=original, tokens_before=tokens, tokens_after=tokens,
            elapsed_ms=(time.perf_counter() - started) * 1000, reason=reason,
        )

    async def _summarise(
        self,
        pruned: Sequence[Message],
        summarised: Sequence[int],
        dropped: Sequence[Message],
        previous: int | None,
    ) -> _Summary:
        """The summary body with its sections: the model when allowed, else the fallback (tiers 1-4)."""
        titles = tuple(section.title for section in self._sections)
        previous_text = handoff_text(pruned[previous]) if previous is not None else None
        previous_body = strip_sections(strip_framing(previous_text), titles) if previous_text else None
        # The sections (fact ledger, user words) do not depend on the summary: they are built in a
        # worker thread while the summary model works, and never hold up the event loop.
        blocks: asyncio.Future[tuple[list[str], SectionDrops]]
        if self._sections:
            blocks = asyncio.ensure_future(
                asyncio.to_thread(build_sections_reported, self._sections, dropped, previous_text, self._counter)
            )
        else:
            blocks = asyncio.get_running_loop().create_future()
            blocks.set_result(([], SectionDrops()))
        try:
            return await self._summary_with(blocks, pruned, summarised, dropped, previous, previous_body, titles)
        finally:
            blocks.cancel()  # a no-op once awaited; otherwise (an error) nobody waits for it

    async def _summary_with(
        self,
        blocks: asyncio.Future[tuple[list[str], SectionDrops]],
        pruned: Sequence[Message],
        summarised: Sequence[int],
        dropped: Sequence[Message],
        previous: int | None,
        previous_body: str | None,
        titles: tuple[str, ...],
    ) -> _Summary:
        """Tiers 1-4 for the body, then the section blocks appended."""
        body: str | None = None
        kind: SummaryKind = "fallback"
        if self._summarizer.available and self.state.cooldown_until <= self._now():
            # The newest handoff goes in as PREVIOUS SUMMARY (a merged one keeps its own
            # message as a turn); older handoffs are ordinary turns.
            candidates = (without_handoff(pruned[i]) if i == previous else pruned[i] for i in summarised)
            turns = tuple(t for t in candidates if t is not None)
            request = SummaryRequest(
                turns=turns,
                previous_summary=previous_body,
                budget_tokens=summary_budget(estimate_messages(dropped), self.context_length),
            )
            try:
                text = await self._summarizer.summarize(request)
            except ModelError as exc:
                self._on_summary_failure(exc)
            else:
                thrash.record_summary_success(self.state)
                body = strip_sections(strip_framing(text), titles)
                kind = "llm"
        elif self._summarizer.available:
            log.info("compression.summary_cooldown", seconds_left=round(self.state.cooldown_until - self._now()))
        if body is None:
            body = fallback_summary(dropped, previous_body)
        built, drops = await blocks
        full = join_sections(body, built)
        contributed = tuple(title for title in titles if f"\n## {title}\n" in f"\n{full}")
        return _Summary(body=full, kind=kind, sections=contributed, drops=drops)

    def _on_summary_failure(self, exc: ModelError) -> None:
        """Tiers 2 and 4: cool down, then abort or let the caller use the fallback summary."""
        seconds = thrash.record_summary_failure(
            self.state, self._now(), not_configured=isinstance(exc, ModelNotConfigured)
        )
        log.warning(
            "compression.summary_failed", error=type(exc).__name__, status=exc.status, model=exc.model,
            cooldown_seconds=seconds,
        )
        if isinstance(exc, ModelAuthError):
            raise _Abort(f"summary model rejected the credentials ({exc.status}); {ABORT_NOTICE}")
        if isinstance(exc, ModelUnavailable) and exc.connection:
            raise _Abort(f"summary model unreachable (network down); {ABORT_NOTICE}")
        if self._settings.abort_on_summary_failure:
            raise _Abort(f"summary failed ({type(exc).__name__}) and abort_on_summary_failure is set; {ABORT_NOTICE}")

    # ---- proactive pruning (§3.8) -----------------------------------------

    def prune_tool_results(self, messages: Sequence[Message], prompt_tokens: int) -> CompressionResult | None:
        """`proactive_prune_tokens` (and `micro_compact`, which prunes after every response whatever the size)."""
        settings = self._settings
        if not settings.enabled or (settings.proactive_prune_tokens <= 0 and not settings.micro_compact):
            return None
        result = self.proactive_prune(messages, prompt_tokens)
        return result if result.changed else None

    def proactive_prune(self, messages: Sequence[Message], prompt_tokens: int) -> CompressionResult:
        """Prune big old tool results on their own once the prompt passes `proactive_prune_tokens`.

        Applies only if it reclaims at least `proactive_prune_min_reclaim_tokens`
        (estimated); touches only results over `proactive_prune_min_result_chars`
        outside the protected tail. No summary, no state change.
        """
        started = time.perf_counter()
        original = tuple(messages)
        settings = self._settings
        floor = 0 if settings.micro_compact else settings.proactive_prune_tokens
        if (settings.proactive_prune_tokens <= 0 and not settings.micro_compact) or prompt_tokens < floor:
            return self._skipped(original, "post_response", started, "below proactive_prune_tokens", prompt_tokens)
        split = find_split(
            original, protect_first_n=0, budget=self.tail_budget, protect_last_n=settings.protect_last_n,
            min_tail_user_messages=0, counter=self._counter,
        )
        links = link_tool_results(original)
        pruned, touched, reclaimed = proactive_candidates(
            original, links, end=split.tail_start, min_result_chars=settings.proactive_prune_min_result_chars,
            keep=frozenset(settings.prune_exclude_tools),
        )
        if not touched or reclaimed < settings.proactive_prune_min_reclaim_tokens:
            return self._skipped(original, "post_response", started, "pruning would reclaim too little", prompt_tokens)
        log.info("compression.proactive_prune", pruned=len(touched), reclaimed_estimate=reclaimed)
        return CompressionResult(
            outcome="compressed", trigger="post_response", messages=tuple(pruned), tokens_before=prompt_tokens,
            tokens_after=max(0, prompt_tokens - reclaimed), pruned_tool_results=len(touched),
            replaced=tuple(original[i] for i in sorted(touched)), elapsed_ms=(time.perf_counter() - started) * 1000,
            reason="proactive prune",
            explain=CompressionExplain(
                roles=tuple(m.role for m in original), head_end=split.tail_start, tail_start=split.tail_start,
                pruned=dict(touched),
            ),
        )


async def _emit(sink: EventSink | None, event: CompressionEvent) -> None:
    if sink is None:
        return
    try:
        await sink(event)
    except Exception as exc:  # noqa: BLE001 - a notice must never break a compression
        log.warning("compression.event_sink_failed", kind=event.kind, error=type(exc).__name__)


__all__ = ["AUTOMATIC_TRIGGERS", "ContextCompressor"]
