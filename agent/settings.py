"""Typed, frozen settings of the agent side: model, auxiliary model, compression, memory, skills, context.

The gateway's `config.py` composes these into the whole configuration tree and
loads it; the agent receives the parts it needs explicitly and never reads the
environment.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, field_validator

MAX_ATTEMPTS_CAP = 10


def _http_url(value: str | None) -> str | None:
    """An endpoint URL must name its scheme: `localhost:8000/v1` would be read as a relative path."""
    if not value:
        return None  # `${BASE_URL:-}` unset: the client's default endpoint
    if not value.lower().startswith(("http://", "https://")):
        raise ValueError(f"an endpoint needs its scheme, e.g. http://{value.split('://')[-1]} or https://…")
    return value


EndpointUrl = Annotated[str | None, AfterValidator(_http_url)]


class Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RetrySettings(Section):
    """Backoff for 429, 5xx, timeouts and connection errors (Retry-After honoured)."""

    max_attempts: int = Field(default=4, ge=1, le=MAX_ATTEMPTS_CAP, description="tries of one model call on 429, 5xx, timeouts and connection errors")
    initial_backoff_seconds: float = Field(default=1.0, ge=0, description="the first wait between tries (doubling; Retry-After honoured)")
    max_backoff_seconds: float = Field(default=30.0, ge=0, description="the longest wait between tries")
    # One model's whole retry chain (attempts and waits) within one model call; past it the next of
    # `model.fallbacks` is tried. Without it a hanging primary cost max_attempts × timeout_seconds.
    total_timeout_seconds: float = Field(
        default=90.0, gt=0, description="one deadline for a model's whole retry chain; past it the next of model.fallbacks is tried",
    )


class FallbackModelSettings(Section):
    """A model tried, in order, after the retries of the one before it fail."""

    name: str
    base_url: EndpointUrl = None
    api_key: SecretStr | None = None
    context_length: int = Field(default=128_000, ge=1024)


class ModelSettings(Section):
    name: str | None = Field(default=None, description="the model, e.g. gpt-4o-mini; null = no model (the gateway says what to set)")
    base_url: EndpointUrl = Field(default=None, description="OpenAI-compatible endpoint root, e.g. http://127.0.0.1:8000/v1; null = api.openai.com")
    api_key: SecretStr | None = Field(default=None, description="the endpoint's API key; empty = none (a local server may need no key)")
    context_length: int = Field(default=128_000, ge=1024, description="the model's context window in tokens")
    max_tokens: int | None = Field(default=None, ge=1, description="reply budget in tokens; subtracted from the window for the threshold; null = the model's")
    timeout_seconds: float = Field(default=120.0, gt=0, description="one model request may take this long")
    vision: bool = Field(default=True, description="images go to the model as image parts; false = a one-line description")
    allowed: list[str] = Field(default_factory=list, description="extra model names a chat may switch to with /model (same endpoint and window)")
    retry: RetrySettings = RetrySettings()
    fallbacks: list[FallbackModelSettings] = Field(
        default_factory=list,
        description="models tried in order after the one before fails (and at once after 401/403): [{name, base_url, api_key, context_length}]",
    )


class AgentSettings(Section):
    """The bot's persona and standing instructions."""

    system_prompt: str | None = Field(default=None, description="the bot's persona and standing instructions; null = built-in default")
    system_prompt_file: str | None = Field(default=None, description="or a file with them, relative to the config file; re-read on reload")
    strip_reasoning: bool = Field(default=True, description="<think>…</think> and reasoning deltas never reach a chat")


class TranscriptionSettings(Section):
    """An OpenAI-compatible /audio/transcriptions endpoint for voice notes and audio files."""

    enabled: bool = Field(default=False, description="voice notes and audio files become text for the model")
    model: str = Field(default="whisper-1", description="the /audio/transcriptions model")
    base_url: str | None = Field(default=None, description="its endpoint; null = the main model's")
    api_key: SecretStr | None = Field(default=None, description="its API key; null = the main model's")


class McpServerSettings(Section):
    """One Model Context Protocol server: stdio (`command`) or streamable HTTP (`url`)."""

    command: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


class McpSettings(Section):
    servers: dict[str, McpServerSettings] = Field(
        default_factory=dict, description="MCP servers by name: {command: [...]} (stdio) or {url: ...} (HTTP); tools appear as NAME__tool",
    )
    tool_timeout_seconds: float = Field(default=60.0, gt=0, description="a tool call that takes longer returns a tool error to the model")
    max_result_chars: int = Field(default=100_000, ge=100, description="a larger tool result is cut (head and tail kept) before it enters the session")
    group_tools: list[str] | None = Field(default=None, description="servers/tools offered in groups without chats.\"…\".tools; null = all, [] = none")

    @field_validator("servers")
    @classmethod
    def _one_transport(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name, server in value.items():
            if not name or not all(ch.isalnum() or ch in "_-" for ch in name):
                raise ValueError(f"server name {name!r} may use only letters, digits, '_' and '-'")
            if bool(server.command) == bool(server.url):
                raise ValueError(f"server {name!r} needs exactly one of command (stdio) or url (streamable HTTP)")
        return value


class AuxiliaryModelSettings(Section):
    provider: Literal["auto", "main"] = Field(
        default="auto", description="auto: this section when it names a model or base_url, else the main model; main: always the main model",
    )
    model: str | None = Field(default=None, description="the summary model of context compression; null = the main model")
    base_url: EndpointUrl = Field(default=None, description="its endpoint; null = the main model's")
    api_key: SecretStr | None = Field(default=None, description="its API key; null = the main model's")
    context_length: int | None = Field(default=None, ge=1024, description="its window in tokens; null = the main model's (must not be smaller)")
    timeout_seconds: float = Field(default=120.0, gt=0, description="one summary request may take this long")


class AuxiliarySettings(Section):
    compression: AuxiliaryModelSettings = AuxiliaryModelSettings()


class CompressionSettings(Section):
    enabled: bool = Field(default=True, description="context compression on or off (master switch)")
    threshold: float = Field(default=0.50, gt=0, le=1, description="compress when the prompt passes this share of the window")
    model_thresholds: dict[str, float] = Field(default_factory=dict, description="threshold per model-name substring, e.g. {\"gpt-4o\": 0.6}")
    threshold_tokens: int | None = Field(default=None, ge=1, description="an absolute cap in tokens, min() with the ratio; null = none")
    target_ratio: float = Field(default=0.20, gt=0, lt=1, description="tail budget = threshold x this ratio")
    protect_first_n: int = Field(default=3, ge=0, description="head messages protected on the first compression only")
    protect_last_n: int = Field(default=20, ge=1, description="tail minimum messages (floor 8)")
    min_tail_user_messages: int = Field(default=1, ge=0, description="real user messages always kept in the tail")
    max_attempts: int = Field(default=3, ge=1, le=MAX_ATTEMPTS_CAP, description="compression retries in one turn (hard cap 10)")
    in_place: bool = Field(default=True, description="true: soft-archive replaced turns; false: rotate to a child session")
    abort_on_summary_failure: bool = Field(default=False, description="true: keep the messages unchanged instead of a fallback summary")
    min_prune_chars: int = Field(default=200, ge=1, description="tool results longer than this become one line when pruned")
    proactive_prune_tokens: int = Field(default=0, ge=0, description="prune old tool results alone past this prompt size; 0 = off")
    proactive_prune_min_result_chars: int = Field(default=8000, ge=1, description="proactive pruning only touches tool results at least this long")
    proactive_prune_min_reclaim_tokens: int = Field(default=4096, ge=0, description="proactive pruning runs only when it frees at least this many tokens")
    progress_notices: bool = Field(default=False, description="show \"compressing context…\" notices in the chat")
    idle_compact_after_seconds: int = Field(default=0, ge=0, description="compact before the next reply after this idle time; 0 = off")
    micro_compact: bool = Field(default=False, description="prune old tool results (no summary) after every tool round, whatever the size")
    hygiene_hard_message_limit: int = Field(default=5000, ge=10, description="safety net: compress beyond this many messages (tail at most half of it)")
    fact_ledger: bool = Field(default=True, description="keep exact facts (constraints, values, paths) verbatim across compressions")
    fact_ledger_max_tokens: int = Field(default=1500, ge=0, description="the fact ledger's size limit in tokens")
    user_words_max_tokens: int = Field(default=1500, ge=0, description="real user messages of the compressed span kept verbatim, up to this many tokens")
    prune_exclude_tools: list[str] = Field(default_factory=list, description="tool names whose results are never pruned, e.g. [notes__recall]")

    @field_validator("model_thresholds")
    @classmethod
    def _ratios_in_range(cls, value: dict[str, float]) -> dict[str, float]:
        for name, ratio in value.items():
            if not 0 < ratio <= 1:
                raise ValueError(f"ratio for {name!r} must be between 0 and 1, got {ratio}")
        return value


class EmbeddingsSettings(Section):
    """The OpenAI-compatible `/v1/embeddings` endpoint of the `semantic` memory provider (null: the chat model's)."""

    model: str = Field(default="text-embedding-3-small", min_length=1, description="the embedding model's name")
    base_url: EndpointUrl = Field(default=None, description="its OpenAI-compatible base URL; null: model.base_url")
    api_key: SecretStr | None = Field(default=None, description="its API key; null: model.api_key")


class MemorySettings(Section):
    memory_enabled: bool = Field(default=True, description="the bot keeps notes about each chat (MEMORY)")
    user_profile_enabled: bool = Field(default=True, description="the bot keeps notes about each user (USER)")
    memory_char_limit: int = Field(default=2200, ge=100, description="a chat's notes are kept within this many characters")
    user_char_limit: int = Field(default=1375, ge=100, description="a user's notes are kept within this many characters")
    nudge_interval: int = Field(default=10, ge=0, description="background memory review every N user turns; 0 = off")
    flush_min_turns: int = Field(default=6, ge=0, description="review before exit when a session has at least this many turns")
    provider: str = Field(default="", description="(start) an external memory provider from the entry-point group chorus.memory_providers; \"\" = none")
    write_approval: Literal["allow", "stage", "block"] = Field(default="allow", description="note writes: allow | stage (held for approval) | block")
    # Writes of untrusted provenance (a turn that processed tool output; a group member who is not an admin):
    # gated by the stricter of this and write_approval.
    untrusted_writes: Literal["allow", "stage", "block"] = Field(
        default="stage", description="writes of untrusted origin (a non-admin group member, a turn that read tool output): allow | stage | block",
    )
    # Ask the auxiliary (summariser) model about writes the deterministic scanner accepted: off, only the
    # borderline ones (errors keep the deterministic verdict), or all (errors refuse): agent/memory/llm_screen.py.
    llm_screen: Literal["off", "borderline", "all"] = Field(
        default="off", description="off | borderline | all: also ask the summary model about note writes the scanner accepted",
    )
    embeddings: EmbeddingsSettings = Field(
        default_factory=EmbeddingsSettings, description="the semantic provider's /v1/embeddings: model, base_url, api_key (null: the chat model's)",
    )

    @field_validator("llm_screen", mode="before")
    @classmethod
    def _unquoted_off(cls, value: object) -> object:
        return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false


class SkillsSettings(Section):
    creation_nudge_interval: int = Field(default=15, ge=0, description="background skill review every N tool iterations; 0 = off")


class ContextSettings(Section):
    engine: str = Field(default="compressor", description="(start) compressor (built in) or a name from the entry-point group chorus.context_engines")
