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

    max_attempts: int = Field(default=4, ge=1, le=MAX_ATTEMPTS_CAP)
    initial_backoff_seconds: float = Field(default=1.0, ge=0)
    max_backoff_seconds: float = Field(default=30.0, ge=0)
    # One model's whole retry chain (attempts and waits) within one model call; past it the next of
    # `model.fallbacks` is tried. Without it a hanging primary cost max_attempts × timeout_seconds.
    total_timeout_seconds: float = Field(default=90.0, gt=0)


class FallbackModelSettings(Section):
    """A model tried, in order, after the retries of the one before it fail."""

    name: str
    base_url: EndpointUrl = None
    api_key: SecretStr | None = None
    context_length: int = Field(default=128_000, ge=1024)


class ModelSettings(Section):
    name: str | None = None
    base_url: EndpointUrl = None
    api_key: SecretStr | None = None
    context_length: int = Field(default=128_000, ge=1024)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_seconds: float = Field(default=120.0, gt=0)
    vision: bool = True
    allowed: list[str] = Field(default_factory=list)
    retry: RetrySettings = RetrySettings()
    fallbacks: list[FallbackModelSettings] = Field(default_factory=list)


class AgentSettings(Section):
    """The bot's persona and standing instructions."""

    system_prompt: str | None = None
    system_prompt_file: str | None = None  # relative to the config file
    strip_reasoning: bool = True


class TranscriptionSettings(Section):
    """An OpenAI-compatible /audio/transcriptions endpoint for voice notes and audio files."""

    enabled: bool = False
    model: str = "whisper-1"
    base_url: str | None = None
    api_key: SecretStr | None = None


class McpServerSettings(Section):
    """One Model Context Protocol server: stdio (`command`) or streamable HTTP (`url`)."""

    command: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


class McpSettings(Section):
    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    tool_timeout_seconds: float = Field(default=60.0, gt=0)
    max_result_chars: int = Field(default=100_000, ge=100)
    group_tools: list[str] | None = None  # servers/tools offered in groups without a `chats.*.tools`; None -> all

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
    provider: Literal["auto", "main"] = "auto"  # auto: this section if it names a model/endpoint; main: the main model
    model: str | None = None
    base_url: EndpointUrl = None
    api_key: SecretStr | None = None
    context_length: int | None = Field(default=None, ge=1024)
    timeout_seconds: float = Field(default=120.0, gt=0)


class AuxiliarySettings(Section):
    compression: AuxiliaryModelSettings = AuxiliaryModelSettings()


class CompressionSettings(Section):
    enabled: bool = True
    threshold: float = Field(default=0.50, gt=0, le=1)
    model_thresholds: dict[str, float] = Field(default_factory=dict)
    threshold_tokens: int | None = Field(default=None, ge=1)
    target_ratio: float = Field(default=0.20, gt=0, lt=1)
    protect_first_n: int = Field(default=3, ge=0)
    protect_last_n: int = Field(default=20, ge=1)
    min_tail_user_messages: int = Field(default=1, ge=0)
    max_attempts: int = Field(default=3, ge=1, le=MAX_ATTEMPTS_CAP)
    in_place: bool = True
    abort_on_summary_failure: bool = False
    min_prune_chars: int = Field(default=200, ge=1)
    proactive_prune_tokens: int = Field(default=0, ge=0)
    proactive_prune_min_result_chars: int = Field(default=8000, ge=1)
    proactive_prune_min_reclaim_tokens: int = Field(default=4096, ge=0)
    progress_notices: bool = False
    idle_compact_after_seconds: int = Field(default=0, ge=0)
    micro_compact: bool = False
    hygiene_hard_message_limit: int = Field(default=5000, ge=10)
    fact_ledger: bool = True
    fact_ledger_max_tokens: int = Field(default=1500, ge=0)
    user_words_max_tokens: int = Field(default=1500, ge=0)
    prune_exclude_tools: list[str] = Field(default_factory=list)  # tool names whose results are never pruned

    @field_validator("model_thresholds")
    @classmethod
    def _ratios_in_range(cls, value: dict[str, float]) -> dict[str, float]:
        for name, ratio in value.items():
            if not 0 < ratio <= 1:
                raise ValueError(f"ratio for {name!r} must be between 0 and 1, got {ratio}")
        return value


class EmbeddingsSettings(Section):
    """The OpenAI-compatible `/v1/embeddings` endpoint of the `semantic` memory provider (null: the chat model's)."""

    model: str = Field(default="text-embedding-3-small", min_length=1)
    base_url: EndpointUrl = None
    api_key: SecretStr | None = None


class MemorySettings(Section):
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memory_char_limit: int = Field(default=2200, ge=100)
    user_char_limit: int = Field(default=1375, ge=100)
    nudge_interval: int = Field(default=10, ge=0)
    flush_min_turns: int = Field(default=6, ge=0)
    provider: str = ""
    write_approval: Literal["allow", "stage", "block"] = "allow"
    # Writes of untrusted provenance (a turn that processed tool output; a group member who is not an admin):
    # gated by the stricter of this and write_approval.
    untrusted_writes: Literal["allow", "stage", "block"] = "stage"
    # Ask the auxiliary (summariser) model about writes the deterministic scanner accepted: off, only the
    # borderline ones (errors keep the deterministic verdict), or all (errors refuse): agent/memory/llm_screen.py.
    llm_screen: Literal["off", "borderline", "all"] = "off"
    embeddings: EmbeddingsSettings = EmbeddingsSettings()

    @field_validator("llm_screen", mode="before")
    @classmethod
    def _unquoted_off(cls, value: object) -> object:
        return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false


class SkillsSettings(Section):
    creation_nudge_interval: int = Field(default=15, ge=0)


class ContextSettings(Section):
    engine: str = "compressor"
