"""The per-chat commands: `/model [NAME]`, `/usage` and `/undo`, and the admin check of group commands.

Owns `ChatCommands`. `/model` shows the chat's model and the choices
(`model.name`, `model.allowed`, the fallbacks) or switches it: the choice is
persisted in the `ChatStore` and the session's agent is rebuilt on the new
model (history and frozen prompt kept; the compressor and hygiene follow the
new window). `/usage` shows this session's and the chat's all-time tokens, and what is left of
each spend limit on the sender and the chat.
`/undo` removes the last exchange (the last real user message and everything
after it) from the session and the store; it is refused while a turn runs.
`admin_refusal` decides whether a group member may run an admin command.
Knows the platforms only as names; runs under the session lock.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adapters.base import InboundMessage
from agent.messages import Message
from agent.store import SessionStore
from gateway.chats.policy import ChatPolicy
from gateway.chats.store import ChatStore
from gateway.intake.commands import ADMIN_COMMANDS, ADMIN_ONLY_TEXT, Command
from gateway.intake.routing import Route
from gateway.limits import SpendGate
from gateway.sessions.service import SessionService
from gateway.sessions.turns import session_usage

UNDO_BUSY_TEXT = "I'm still answering; /undo once the reply is done (or /stop it first)."
NOTHING_TO_UNDO_TEXT = "nothing to undo in this conversation."
UNDONE_TEXT = "removed the last exchange ({n} message(s)) from this conversation."
UNKNOWN_MODEL_TEXT = "{name} is not one of this chat's models: {choices}"


@dataclass(frozen=True, slots=True)
class CommandContext:
    message: InboundMessage
    route: Route
    busy: bool  # a turn of this session is running


def admin_refusal(command: Command, message: InboundMessage, policy: ChatPolicy) -> str | None:
    """The one-line refusal when a non-admin runs an admin command in a group (None: allowed)."""
    if message.chat_type != "group" or command.name not in ADMIN_COMMANDS:
        return None
    if command.name == "model" and not command.args:
        return None  # showing the model changes nothing
    admins = policy.admins(message.platform)
    if not admins or message.user_id in admins:
        return None
    return ADMIN_ONLY_TEXT.format(name=command.name)


def last_exchange_start(history: Sequence[Message]) -> int | None:
    """Index of the last real user message (summaries excluded), where the last exchange starts."""
    for index in range(len(history) - 1, -1, -1):
        item = history[index]
        if item.role == "user" and not item.compressed_summary:
            return index
    return None


class ChatCommands:
    """Runs `/model`, `/usage` and `/undo` for one gateway.

    Args:
        sessions: the owner of work on a session (lock, agent, save).
        store: the session store.
        chats: the per-chat settings store.
        policy: the running config's view of chats.
        current_model: the model a chat uses now (its stored choice, else config).
        limits: the spend limits `/usage` shows what is left of (None: not shown).
    """

    def __init__(
        self,
        *,
        sessions: SessionService,
        store: SessionStore,
        chats: ChatStore,
        policy: ChatPolicy,
        current_model: Callable[[str], str],
        limits: SpendGate | None = None,
    ) -> None:
        self._sessions = sessions
        self._agents = sessions.agents
        self._store = store
        self._chats = chats
        self._policy = policy
        self._current_model = current_model
        self._limits = limits

    async def run(self, command: Command, ctx: CommandContext) -> str:
        if command.name == "model":
            return await self.model(command.args, ctx)
        if command.name == "usage":
            return await self.usage(ctx)
        return await self.undo(ctx)

    async def model(self, name: str, ctx: CommandContext) -> str:
        chat = ctx.route.chat_scope
        current = await asyncio.to_thread(self._current_model, chat)
        choices = [choice.name for choice in self._policy.models()]
        if not name:
            others = ", ".join(c for c in choices if c != current) or "none configured"
            return f"model: {current or 'none'}\nother choices: {others}"
        if name not in choices:
            return UNKNOWN_MODEL_TEXT.format(name=name, choices=", ".join(choices) or "none configured")
        if name == current:
            return f"this chat already uses {name}."
        configured = self._policy.configured_model(chat) or self._policy.config.model.name
        await asyncio.to_thread(self._chats.set_model, chat, None if name == configured else name)
        async with self._sessions.session(ctx.route):
            await self._agents.switch_model(ctx.route, name, previous=current)
        return f"switched this chat to {name}."

    async def usage(self, ctx: CommandContext) -> str:
        agent = self._agents.peek(ctx.route)
        if agent is None:
            agent = await self._agents.get(ctx.route)
        session = session_usage(agent)
        record = await asyncio.to_thread(self._chats.get, ctx.route.chat_scope)
        left = await self._limits.usage(ctx.message, ctx.route) if self._limits is not None else []
        return "\n".join([
            f"this conversation: {session.total:,} tokens ({session.prompt_tokens:,} prompt, "
            f"{session.completion_tokens:,} completion, {session.requests} request(s))",
            f"this chat, all time: {record.usage.total:,} tokens ({record.usage.prompt_tokens:,} prompt, "
            f"{record.usage.completion_tokens:,} completion, {record.usage.requests} request(s))",
            *left,
        ])

    async def undo(self, ctx: CommandContext) -> str:
        if ctx.busy:
            return UNDO_BUSY_TEXT
        async with self._sessions.session(ctx.route) as held:
            agent = held.agent
            start = last_exchange_start(agent.history)
            if start is None:
                return NOTHING_TO_UNDO_TEXT
            removed = len(agent.history) - start
            await asyncio.to_thread(self._store.delete_last_active, agent.session_id, removed)
            agent.history = agent.history[:start]
            await self._agents.save(ctx.route, agent)
        return UNDONE_TEXT.format(n=removed)


__all__ = ["ChatCommands", "CommandContext", "admin_refusal", "last_exchange_start"]
