"""The per-chat commands: `/model [NAME]`, `/usage` and `/undo`.

Owns `ChatCommands`. `/model` shows the chat's model and the choices
(`model.name`, `model.allowed`, the fallbacks) or switches it: the choice is
persisted in the `ChatStore` and the session's agent is rebuilt on the new
model (history and frozen prompt kept; the compressor and hygiene follow the
new window). `/usage` shows this session's and the chat's all-time tokens, and what is left of
each spend limit on the sender and the chat.
`/undo` removes the last exchange (the last real user message and everything
after it) from the session and the store; it is refused while a turn runs.
Their specs are in `gateway/commands/table.py`. Knows the platforms only as names; runs under the session lock.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from agent.messages import Message
from agent.store import SessionStore
from gateway.chats.policy import ChatPolicy
from gateway.chats.store import ChatStore
from gateway.commands.calls import CommandCall
from gateway.i18n import Phrase, joined, say, say_n
from gateway.limits import SpendGate
from gateway.sessions.service import SessionService
from gateway.sessions.turns import session_usage


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

    async def model(self, call: CommandCall) -> Phrase:
        name, route, language = call.command.args, call.route, call.language
        chat = route.chat_scope
        current = await asyncio.to_thread(self._current_model, chat)
        choices = [choice.name for choice in self._policy.models()]
        if not name:
            others = ", ".join(c for c in choices if c != current) or say(language, "model.none_configured")
            return say(language, "model.show", current=current or say(language, "model.none"), others=others)
        if name not in choices:
            return say(language, "model.unknown", name=name,
                       choices=", ".join(choices) or say(language, "model.none_configured"))
        if name == current:
            return say(language, "model.already", name=name)
        configured = self._policy.configured_model(chat) or self._policy.config.model.name
        await asyncio.to_thread(self._chats.set_model, chat, None if name == configured else name)
        async with self._sessions.session(route):
            await self._agents.switch_model(route, name, previous=current)
        return say(language, "model.switched", name=name)

    async def usage(self, call: CommandCall) -> Phrase:
        agent = self._agents.peek(call.route)
        if agent is None:
            agent = await self._agents.get(call.route)
        session = session_usage(agent)
        record = await asyncio.to_thread(self._chats.get, call.route.chat_scope)
        language = call.language
        left = await self._limits.usage(call.message, call.route, language) if self._limits is not None else []
        return joined([
            say_n(language, "usage.conversation", session.requests, total=session.total,
                  prompt=session.prompt_tokens, completion=session.completion_tokens),
            say_n(language, "usage.chat", record.usage.requests, total=record.usage.total,
                  prompt=record.usage.prompt_tokens, completion=record.usage.completion_tokens),
            *left,
        ])

    async def undo(self, call: CommandCall) -> Phrase:
        if call.host.busy(call.route):
            return say(call.language, "undo.busy")
        async with self._sessions.session(call.route) as held:
            agent = held.agent
            start = last_exchange_start(agent.history)
            if start is None:
                return say(call.language, "undo.nothing")
            removed = len(agent.history) - start
            await asyncio.to_thread(self._store.delete_last_active, agent.session_id, removed)
            agent.history = agent.history[:start]
            await self._agents.save(call.route, agent)
        return say_n(call.language, "undo.done", removed)


__all__ = ["ChatCommands", "last_exchange_start"]
