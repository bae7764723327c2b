"""The conversation loop: one user turn through OpenAI tool calling, with the three compression triggers.

Owns `ConversationLoop`, `LoopSettings`, `TurnUsage` and `TurnResult`. A turn
sends the system prompt plus the history to the `ModelClient`, runs the tool
calls the model asks for, and stops at a text answer or at the iteration cap.
Compression (docs/design.md §3.2) enters at three points: preflight (an estimate that
counts the tool schemas), post-response (real `prompt_tokens`) and error
recovery (`ContextOverflow` / long-context `RateLimited`, at most
`max_attempts` times). Status events go up through `on_event`; reply text
streams through `on_text`.

Knows no platforms, session stores or gateways: the caller persists what the
result says (`new_messages`, or the whole `history` after a compression).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import structlog

from agent.context import cut_largest, drop_oldest
from agent.context.engine import CompressionResult, ContextEngine, EventSink, Trigger
from agent.messages import Message, ToolCall, ToolSchema, system, tool_result
from agent.model_client import Completion, ModelClient, TextSink, parse_arguments
from agent.tokens import estimate_tokens
from agent.tools.base import Tool, ToolContext, ToolSource, refused
from agent.tracing import CallSpan, tool_call
from chorus_errors import ContextOverflow, RateLimited

log = structlog.get_logger(__name__)

StopReason = Literal["answered", "max_iterations"]
RECALL_HEADER = "Recalled context (from long-term memory; reference only, may be incomplete):"
CUT_NOTICE = "Your message was too long for this model, so I shortened the largest part before answering."
CUT_HISTORY_NOTICE = "This conversation was too long for the model, so I shortened its largest part before answering."
DROPPED_NOTICE = ("This model's context window is small, so I left the oldest part of our conversation out to answer "
                  "(/new starts afresh).")
RETRY_BUDGET_FACTOR = 0.75  # each overflow past the first asks for a request this much smaller: estimates err
MIN_BUDGET_TOKENS = 256
MAX_ITERATIONS_NOTE = "I stopped after {n} tool steps without a final answer; ask me to continue if needed."


TOOL_OUTPUT = "tool_output"
# Tools whose results only echo what the scanner already admitted (the notes, and the skills, whose writes of
# untrusted origin wait for an operator): reading them does not make a turn's later writes untrusted.
TRUSTED_OUTPUT_TOOLS = frozenset({"memory", "skill_view"})


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Limits of one turn.

    Args:
        max_iterations: model requests per turn (each tool round costs one).
        max_attempts: forced compressions after overflow errors in one turn.
        max_tokens: reply budget sent with each request (None: the provider's default).
    """

    max_iterations: int = 12
    max_attempts: int = 3
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class TurnUsage:
    requests: int = 0
    prompt_tokens: int = 0  # summed over the turn's requests
    completion_tokens: int = 0
    last_prompt_tokens: int | None = None  # the newest real reading


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What one turn produced.

    `history` is the whole conversation after the turn (without the system
    prompt). When `compressions` holds a changed result, the caller replaces
    the stored messages with `history`; otherwise it appends `new_messages`.
    `history` is the turn's own list, handed over rather than copied (two
    copies of a long history a turn were O(n) work for O(1) news): the
    session's agent adopts it as its history, so nobody else may keep or
    change it.
    """

    reply: str
    history: list[Message]
    new_messages: tuple[Message, ...]
    compressions: tuple[CompressionResult, ...]
    usage: TurnUsage
    stop_reason: StopReason = "answered"
    notice: str | None = None  # one short line for the user (e.g. their message was cut to fit)

    @property
    def compressed(self) -> bool:
        return any(result.changed for result in self.compressions)


@dataclass(slots=True)
class _TurnState:
    history: list[Message]
    new: list[Message]
    compressions: list[CompressionResult] = field(default_factory=list)
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last_prompt_tokens: int | None = None
    notice: str | None = None


SystemPrompt = Callable[[], str]
ToolSink = Callable[[ToolCall], Awaitable[None]]  # told when a tool call starts (progress notices)
SteerSource = Callable[[], Sequence[Message]]  # user messages that arrived during the turn (steer mode)


def strip_system(messages: Sequence[Message]) -> list[Message]:
    """The history part of a request: leading system messages removed."""
    start = 0
    while start < len(messages) and messages[start].role == "system":
        start += 1
    return list(messages[start:])


class ConversationLoop:
    """Runs turns of one session's conversation.

    Args:
        model: the main model endpoint.
        engine: the session's context engine (its state persists with the session).
        tools: tools offered to the model, by schema name.
        settings: per-turn limits.
        system_prompt: returns the system prompt text; called per request so a
            compaction note appears right after a compression.
        source: tools whose set changes while the agent lives (MCP), asked before
            every request and offered after `tools`.
    """

    def __init__(
        self,
        *,
        model: ModelClient,
        engine: ContextEngine,
        tools: Sequence[Tool],
        settings: LoopSettings,
        system_prompt: SystemPrompt,
        source: ToolSource | None = None,
    ) -> None:
        self.model = model
        self.engine = engine
        self._static = tuple(tools)
        self._source = source
        self._tools = {tool.schema.name: tool for tool in tools}
        self._schemas: tuple[ToolSchema, ...] = tuple(tool.schema for tool in tools)
        self._dynamic: tuple[Tool, ...] = ()
        self.settings = settings
        self._system_prompt = system_prompt
        self._recall: str | None = None

    @property
    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._schemas

    def _refresh_tools(self) -> None:
        """Offer what the source has now: a server that went down takes its tools out of the next request."""
        if self._source is None:
            return
        dynamic = tuple(self._source.current())
        if dynamic == self._dynamic:
            return
        self._dynamic = dynamic
        fixed = {tool.schema.name for tool in self._static}  # a built-in tool keeps its name
        offered = [*self._static, *(tool for tool in dynamic if tool.schema.name not in fixed)]
        self._tools = {tool.schema.name: tool for tool in offered}
        self._schemas = tuple(tool.schema for tool in offered)

    def request(self, history: Sequence[Message]) -> list[Message]:
        """The message list sent to the model: system prompt first (plus this turn's recalled context)."""
        prompt = self._system_prompt()
        if self._recall:
            prompt = f"{prompt}\n\n{RECALL_HEADER}\n{self._recall}"
        return [system(prompt), *history]

    async def compress(
        self,
        history: Sequence[Message],
        *,
        trigger: Trigger,
        force: bool = False,
        on_event: EventSink | None = None,
    ) -> CompressionResult:
        """Compress `history` (without system prompt); the result's messages exclude the system prompt too."""
        result = await self.engine.compress(self.request(history), trigger=trigger, force=force, on_event=on_event)
        if not result.changed:
            return result
        kept = tuple(strip_system(result.messages))
        log.info(
            "compression.applied",
            trigger=trigger,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            messages_before=len(history),
            messages_after=len(kept),
            summary_kind=result.summary_kind,
        )
        return CompressionResult(
            outcome=result.outcome,
            trigger=result.trigger,
            messages=kept,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            summary_kind=result.summary_kind,
            pruned_tool_results=result.pruned_tool_results,
            replaced=result.replaced,
            summary_text=result.summary_text,
            elapsed_ms=result.elapsed_ms,
            reason=result.reason,
            fact_drops=result.fact_drops,
        )

    async def run(
        self,
        history: Sequence[Message],
        user_message: Message,
        *,
        context: ToolContext,
        on_text: TextSink | None = None,
        on_event: EventSink | None = None,
        recall: str | None = None,
        on_tool: ToolSink | None = None,
        steer: SteerSource | None = None,
    ) -> TurnResult:
        """Answer `user_message` given `history`; tool calls run until a text answer or the cap.

        `recall` (an external memory provider's context for this turn) is shown
        to the model for this turn only and never stored. `on_tool` hears of
        each tool call as it starts. `steer` is asked after each round of tool
        results for messages that arrived meanwhile; they join the turn there.
        """
        self._recall = recall
        try:
            return await self._run(
                history, user_message, context=context, on_text=on_text, on_event=on_event, on_tool=on_tool,
                steer=steer,
            )
        finally:
            self._recall = None

    async def _run(
        self,
        history: Sequence[Message],
        user_message: Message,
        *,
        context: ToolContext,
        on_text: TextSink | None,
        on_event: EventSink | None,
        on_tool: ToolSink | None = None,
        steer: SteerSource | None = None,
    ) -> TurnResult:
        turn = _TurnState(history=[*history, user_message], new=[user_message])
        for _ in range(self.settings.max_iterations):
            self._refresh_tools()
            # One request list for the gate and the call (the history is copied once, not twice, per request).
            request = self.request(turn.history)
            preflight = self.engine.should_compress_preflight(request, self._schemas)
            if preflight:
                await self._apply(turn, "preflight", on_event=on_event)
            completion = await self._complete(
                turn, request=None if preflight else request, on_text=on_text, on_event=on_event
            )
            message = completion.message
            self._append(turn, message)
            if message.tool_calls:
                for result in await self._run_tools(message.tool_calls, context, on_tool):
                    self._append(turn, result)
                for steered in steer() if steer is not None else ():
                    self._append(turn, steered)  # a message sent meanwhile, seen before the next request
                if context.untrusted is None and any(c.name not in TRUSTED_OUTPUT_TOOLS for c in message.tool_calls):
                    # A tool result (a web page, an MCP reply, a search hit) may carry instructions:
                    # whatever this turn stores from here on is of untrusted origin.
                    context = replace(context, untrusted=TOOL_OUTPUT)
            if self.engine.should_compress(completion.prompt_tokens):
                await self._apply(turn, "post_response", on_event=on_event)
            elif message.tool_calls:
                self._prune(turn, completion.prompt_tokens or 0)
            if not message.tool_calls:
                return self._result(turn, message.text, "answered")
        note = MAX_ITERATIONS_NOTE.format(n=self.settings.max_iterations)
        log.warning("turn.max_iterations", max_iterations=self.settings.max_iterations)
        return self._result(turn, note, "max_iterations")

    def _prune(self, turn: _TurnState, prompt_tokens: int) -> None:
        """Old tool results shrunk on their own between tool rounds (`proactive_prune_tokens`, `micro_compact`)."""
        result = self.engine.prune_tool_results(self.request(turn.history), prompt_tokens)
        if result is None:
            return
        turn.compressions.append(result)
        turn.history = strip_system(result.messages)
        turn.new = []  # persisted from `history`, as after a compression

    def _append(self, turn: _TurnState, message: Message) -> None:
        turn.history.append(message)
        turn.new.append(message)

    async def _apply(
        self, turn: _TurnState, trigger: Trigger, *, force: bool = False, on_event: EventSink | None
    ) -> CompressionResult:
        result = await self.compress(turn.history, trigger=trigger, force=force, on_event=on_event)
        turn.compressions.append(result)
        if result.changed:
            turn.history = list(result.messages)
            # Everything is persisted from `history` after a compression.
            turn.new = []
        return result

    async def _complete(
        self, turn: _TurnState, *, request: list[Message] | None = None, on_text: TextSink | None,
        on_event: EventSink | None,
    ) -> Completion:
        attempts = 0
        while True:
            if request is None:
                request = self.request(turn.history)
            try:
                completion = await self.model.complete(
                    request,
                    tools=self._schemas,
                    max_tokens=self.settings.max_tokens,
                    on_text=on_text,
                )
            except (ContextOverflow, RateLimited) as exc:
                if isinstance(exc, RateLimited) and not exc.long_context:
                    raise
                attempts += 1
                if attempts > self.settings.max_attempts:
                    raise
                log.warning("turn.context_overflow", attempt=attempts, status=exc.status,
                            window=self.engine.context_length)
                result = await self._apply(turn, "error_recovery", force=True, on_event=on_event)
                changed = result.changed
                budget = self._budget(attempts)
                if self._estimate(turn) > budget:
                    # What compression left does not fit beside the tool schemas: older turns go, then the
                    # largest text is cut (a small window, or a message bigger than it).
                    changed = self._drop_oldest(turn, budget) or changed
                if not changed or self._estimate(turn) > budget:
                    changed = self._cut(turn, budget) or changed
                if not changed:
                    raise
                request = None  # compressed or cut: the next attempt sends the new history
                continue
            turn.requests += 1
            turn.completion_tokens += completion.completion_tokens or 0
            if completion.prompt_tokens is not None:
                turn.prompt_tokens += completion.prompt_tokens
                turn.last_prompt_tokens = completion.prompt_tokens
                self.engine.record_usage(completion.prompt_tokens)
            return completion

    async def _run_tools(
        self, calls: Sequence[ToolCall], context: ToolContext, on_tool: ToolSink | None
    ) -> list[Message]:
        """Run one response's tool calls concurrently; results keep the calls' order."""
        if on_tool is not None:
            for call in calls:
                try:
                    await on_tool(call)
                except Exception as exc:  # noqa: BLE001 - a progress notice never stops a tool
                    log.warning("tool.progress_failed", tool=call.name, error=type(exc).__name__)
        if len(calls) == 1:
            return [await self._run_tool(calls[0], context)]
        return list(await asyncio.gather(*(self._run_tool(call, context) for call in calls)))
    def _estimate(self, turn: _TurnState) -> int:
        return self._estimate_messages(turn.history)

    def _estimate_messages(self, history: Sequence[Message]) -> int:
        return sum(estimate_tokens(m.text) + 4 for m in self.request(list(history)))

    def _budget(self, attempts: int) -> int:
        """Tokens the messages may take after `attempts` overflows: the threshold less the tool schemas (which the
        provider counts and the messages' estimate does not), smaller with each overflow past the first."""
        tools = estimate_tokens(json.dumps([schema.to_wire() for schema in self._schemas])) if self._schemas else 0
        budget = (self.engine.threshold_tokens - tools) * RETRY_BUDGET_FACTOR ** max(0, attempts - 1)
        return max(MIN_BUDGET_TOKENS, int(budget))

    def _drop_oldest(self, turn: _TurnState, budget: int) -> bool:
        """Leave the oldest turns out until the request fits `budget` (persisted like a compression; the user told)."""
        dropped = drop_oldest(turn.history, fits=lambda kept: self._estimate_messages(kept) <= budget)
        if dropped is None:
            return False
        log.warning("turn.oldest_dropped", messages=len(dropped.dropped), budget_tokens=budget,
                    window=self.engine.context_length)
        turn.compressions.append(CompressionResult(
            outcome="compressed", trigger="error_recovery", messages=dropped.kept, tokens_before=0, tokens_after=0,
            replaced=dropped.dropped, reason="oldest turns left out to fit the window",
        ))
        turn.history, turn.new = list(dropped.kept), []  # persisted whole, like a compression
        turn.notice = DROPPED_NOTICE
        return True

    def _cut(self, turn: _TurnState, budget: int | None = None) -> bool:
        """Nothing left to compress: cut the largest text to fit the window (the user is told once)."""
        request = self.request(turn.history)
        cut = cut_largest(request, budget_tokens=budget if budget is not None else self.engine.threshold_tokens)
        if cut is None:
            return False
        kept = tuple(strip_system(cut.messages))
        log.warning("turn.content_cut", removed_chars=cut.removed_chars, role=cut.messages[cut.index].role)
        replaced = (request[cut.index],)
        turn.compressions.append(CompressionResult(
            outcome="compressed", trigger="error_recovery", messages=kept, tokens_before=0, tokens_after=0,
            replaced=replaced, reason="largest content cut to fit the window",
        ))
        turn.history, turn.new = list(kept), []  # persisted whole, like a compression
        turn.notice = CUT_NOTICE if cut.index == len(request) - 1 and replaced[0].role == "user" else CUT_HISTORY_NOTICE
        return True

    async def _run_tool(self, call: ToolCall, context: ToolContext) -> Message:
        with tool_call(call) as span:  # an `execute_tool` span inside a traced message (the approval wait too)
            return await self._tool_result(call, context, span)

    async def _tool_result(self, call: ToolCall, context: ToolContext, span: CallSpan) -> Message:
        tool = self._tools.get(call.name)
        if tool is None:
            text = refused(f"unknown tool {call.name!r}; available: {', '.join(sorted(self._tools)) or 'none'}")
            return tool_result(call.id, text, name=call.name)
        if context.gate is not None:
            refusal = await context.gate.admit(call)
            if refusal is not None:
                return tool_result(call.id, refusal, name=call.name)
        try:
            text = await tool(parse_arguments(call), context)
        except Exception as exc:  # noqa: BLE001 - a tool failure is reported to the model, never raised
            log.warning("tool.failed", tool=call.name, error=type(exc).__name__)
            span.failed(exc)
            text = refused(f"tool {call.name} failed ({type(exc).__name__}); try another way")
        return tool_result(call.id, text, name=call.name)

    def _result(self, turn: _TurnState, reply: str, stop: StopReason) -> TurnResult:
        usage = TurnUsage(
            requests=turn.requests,
            prompt_tokens=turn.prompt_tokens,
            completion_tokens=turn.completion_tokens,
            last_prompt_tokens=turn.last_prompt_tokens,
        )
        return TurnResult(
            reply=reply,
            history=turn.history,  # the loop keeps no reference to it after this
            new_messages=tuple(turn.new),
            compressions=tuple(turn.compressions),
            usage=usage,
            stop_reason=stop,
            notice=turn.notice,
        )


__all__ = [
    "ConversationLoop",
    "LoopSettings",
    "SteerSource",
    "SystemPrompt",
    "ToolSink",
    "TurnResult",
    "TurnUsage",
    "strip_system",
]
