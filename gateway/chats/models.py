"""Which model a chat's agent talks to: the clients per model name and the chat's current choice.

Owns `ModelClients` (one client per model name a chat may use; a fallback's
own endpoint and key where it has them) and `ChatModels`, which answers the
agent pool's "which model and engine for this chat" from the per-chat store
(`/model`), then `chats."PLATFORM:CHAT".model`, then `model.name`, and gives
each a context engine sized for that model's window. Also the persona
callable the pool freezes into a new session. Owns `LiveModel`, the main
model client every part holds, whose chain is replaced in place when `model.*`
changes at runtime (the retired chain is closed at shutdown, so a request in
flight on it finishes). Knows nothing of platforms.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.context.engine import ContextEngine
from agent.messages import Message, ToolSchema
from agent.model_client import Completion, ModelClient, OpenAIModelClient, TextSink
from gateway.chats.policy import ChatPolicy, ModelChoice
from gateway.chats.store import ChatStore
from gateway.config import ChorusConfig


@dataclass(frozen=True, slots=True)
class ChatModel:
    """The model a chat's agent talks to and the engine sized for its window (what the agent pool asks for)."""

    client: ModelClient
    engine: Callable[[], ContextEngine]


def with_model(config: ChorusConfig, choice: ModelChoice) -> ChorusConfig:
    """`config` as if `choice` were the main model (its name and window), for a chat's engine."""
    model = config.model.model_copy(update={"name": choice.name, "context_length": choice.context_length})
    return config.model_copy(update={"model": model})


class LiveModel:
    """A `ModelClient` whose endpoint chain can be replaced while the gateway runs (`model.*` changed).

    Args:
        inner: the chain built from the start config.
    """

    def __init__(self, inner: ModelClient) -> None:
        self._inner = inner
        self._retired: list[ModelClient] = []

    @property
    def model(self) -> str:  # the Protocol's attribute, read live from the chain in force
        return self._inner.model

    @model.setter
    def model(self, value: str) -> None:
        self._inner.model = value

    def replace(self, inner: ModelClient) -> None:
        """Requests from now on go to `inner`; the old chain is kept open for those in flight."""
        self._retired.append(self._inner)
        self._inner = inner

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSchema] = (), max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        return await self._inner.complete(messages, tools=tools, max_tokens=max_tokens, on_text=on_text)

    async def close(self) -> None:
        for client in (*self._retired, self._inner):
            await client.close()
        self._retired.clear()


class ModelClients:
    """One model client per model name a chat may use; fallbacks keep their own endpoint and key."""

    def __init__(self, config: ChorusConfig, main: ModelClient) -> None:
        self._config = config
        self._clients: dict[str, ModelClient] = {main.model: main} if main.model else {}
        self._made: list[OpenAIModelClient] = []

    def follow(self, config: ChorusConfig, main: ModelClient) -> None:
        """Clients by name for a changed config (the ones made before stay open until `close`)."""
        self._config = config
        self._clients = {main.model: main} if main.model else {}

    def get(self, name: str) -> ModelClient:
        client = self._clients.get(name)
        if client is None:
            model = self._config.model
            base_url, api_key = model.base_url, model.api_key
            for fallback in model.fallbacks:
                if fallback.name == name:
                    base_url, api_key = fallback.base_url or base_url, fallback.api_key or api_key
                    break
            made = OpenAIModelClient(
                model=name, base_url=base_url, api_key=api_key.get_secret_value() if api_key else None,
                timeout_seconds=model.timeout_seconds,
            )
            self._made.append(made)
            client = self._clients[name] = made
        return client

    async def close(self) -> None:
        for client in self._made:
            await client.close()


class ChatModels:
    """A chat's model and engine, and its persona, for the agent pool.

    Args:
        policy: the running config's view of chats.
        chats: the per-chat store (the `/model` choice).
        main: the main model's client (a chat on it needs no override).
        clients: clients by model name.
        engine: builds the engine of a chat on another model.
    """

    def __init__(
        self,
        *,
        policy: ChatPolicy,
        chats: ChatStore,
        main: ModelClient,
        clients: ModelClients,
        engine: Callable[[ModelChoice], ContextEngine],
    ) -> None:
        self._policy = policy
        self._chats = chats
        self._main = main
        self._clients = clients
        self._engine = engine

    def current(self, chat: str) -> str:
        """The chat's model: its `/model` choice, else `chats.<chat>.model`, else `model.name` (sync: a store read)."""
        names = {choice.name for choice in self._policy.models()}
        for name in (self._chats.get(chat).model, self._policy.configured_model(chat)):
            if name and name in names:
                return name
        return self._main.model

    def for_chat(self, chat: str) -> ChatModel | None:
        """The chat's model and engine when it is not the main model (None: the pool's defaults)."""
        name = self.current(chat)
        if not name or name == self._main.model:
            return None
        choice = next(c for c in self._policy.models() if c.name == name)
        build = self._engine
        return ChatModel(client=self._clients.get(name), engine=lambda: build(choice))

    def persona(self, chat: str) -> tuple[str, str]:
        """The chat's base prompt and its source."""
        choice = self._policy.prompt_for(chat)
        return choice.text, choice.source


__all__ = ["ChatModel", "ChatModels", "LiveModel", "ModelClients", "with_model"]
