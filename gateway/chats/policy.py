"""Per-chat policy read from the running config: persona, model choices, mention rule, admins.

Owns `ChatPolicy`, the one holder the gateway asks "which prompt, which model,
must this group mention me, is this user an admin" for a chat; it follows the
live config (`update`, called by the admin wiring on SIGHUP or
`POST /api/config/reload`), so a change reaches the next new session without a
restart. Owns `PromptChoice` (the text and where it came from: `default`,
`config`, `file` or `chat override`) and `model_choices` (the names `/model`
may switch to). Knows nothing of agents or sessions.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

import structlog

from agent.prompt import DEFAULT_BASE_PROMPT
from agent.settings import ModelSettings
from gateway.config import ChatSettings, ChorusConfig, PlatformAccess
from gateway.intake.allowlist import AccessRules

log = structlog.get_logger(__name__)

PromptSource: TypeAlias = Literal["default", "config", "file", "chat override"]
PROMPT_FILE_MAX_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class PromptChoice:
    """The base system prompt of a chat and where it came from."""

    text: str
    source: PromptSource


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model a chat may use: its name and window (fallbacks carry their own endpoint)."""

    name: str
    context_length: int


def read_prompt_file(path: Path) -> str:
    """The prompt file's text (UTF-8, stripped, capped); OSError when it cannot be read."""
    return path.read_text(encoding="utf-8").strip()[:PROMPT_FILE_MAX_CHARS]


def model_choices(model: ModelSettings) -> list[ModelChoice]:
    """`model.name`, then `model.allowed`, then the fallbacks' names; first occurrence wins."""
    seen: dict[str, ModelChoice] = {}
    if model.name:
        seen[model.name] = ModelChoice(model.name, model.context_length)
    for name in model.allowed:
        seen.setdefault(name, ModelChoice(name, model.context_length))
    for fallback in model.fallbacks:
        seen.setdefault(fallback.name, ModelChoice(fallback.name, fallback.context_length))
    return list(seen.values())


class ChatPolicy:
    """What the running config says about one chat.

    Args:
        config: the config in force at start; `update` replaces it.
    """

    def __init__(self, config: ChorusConfig) -> None:
        self._config = config
        self._rules: dict[str, AccessRules] = {}

    @property
    def config(self) -> ChorusConfig:
        return self._config

    def update(self, config: ChorusConfig) -> None:
        """Follow a reloaded config (new sessions see it; running ones keep their frozen prompt)."""
        self._config = config
        self._rules = {}

    def chat(self, chat_scope: str) -> ChatSettings | None:
        """`chats."PLATFORM:CHAT"` for this chat, if configured."""
        return self._config.chats.get(chat_scope)

    def prompt_for(self, chat_scope: str) -> PromptChoice:
        """Chat override, else `agent.system_prompt_file`, else `agent.system_prompt`, else the default."""
        chat = self.chat(chat_scope)
        if chat is not None and chat.system_prompt and chat.system_prompt.strip():
            return PromptChoice(chat.system_prompt.strip(), "chat override")
        agent = self._config.agent
        if agent.system_prompt_file:
            try:
                text = read_prompt_file(Path(agent.system_prompt_file))
            except OSError as exc:
                # Checked at load; deleted since: keep answering with the next choice.
                log.warning("persona.file_unreadable", path=agent.system_prompt_file, error=type(exc).__name__)
            else:
                if text:
                    return PromptChoice(text, "file")
        if agent.system_prompt and agent.system_prompt.strip():
            return PromptChoice(agent.system_prompt.strip(), "config")
        return PromptChoice(DEFAULT_BASE_PROMPT, "default")

    def configured_model(self, chat_scope: str) -> str | None:
        """`chats."PLATFORM:CHAT".model`, if set."""
        chat = self.chat(chat_scope)
        return chat.model if chat is not None and chat.model else None

    def models(self) -> list[ModelChoice]:
        return model_choices(self._config.model)

    def require_mention(self, platform: str, chat_scope: str) -> bool | None:
        """The chat's `require_mention` override (None: the platform's setting applies)."""
        chat = self.chat(chat_scope)
        return chat.require_mention if chat is not None else None

    def _access(self, platform: str) -> PlatformAccess | None:
        settings = getattr(self._config.platforms, platform, None)
        return settings if isinstance(settings, PlatformAccess) else None

    def access_rules(self, platform: str) -> AccessRules | None:
        """The platform's allowlist as the running config says (None: no such platform, deny)."""
        rules = self._rules.get(platform)
        if rules is None:
            access = self._access(platform)
            if access is None:
                return None
            rules = self._rules[platform] = AccessRules.of(
                platform, allowed_users=access.allowed_users, allowed_chats=access.allowed_chats,
                allow_all_users=access.allow_all_users,
            )
        return rules

    def platform_require_mention(self, platform: str, default: bool) -> bool:
        access = self._access(platform)
        return access.require_mention if access is not None else default

    def pairing(self, platform: str) -> bool:
        access = self._access(platform)
        return access is not None and access.pairing

    def admins(self, platform: str) -> frozenset[str]:
        access = self._access(platform)
        return frozenset(access.admins) if access is not None else frozenset()


__all__ = ["ChatPolicy", "ModelChoice", "PromptChoice", "PromptSource", "model_choices", "read_prompt_file"]
