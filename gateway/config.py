"""The whole configuration tree: loading, `${ENV}` interpolation, validation, error texts.

Owns `ChorusConfig` and `load_config`. Every error names the key, the bad value
(never for secrets) and what is allowed. No other module reads `os.environ`
for configuration.
"""
from __future__ import annotations

import difflib
import os
import re
import time
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from agent.settings import (
    AgentSettings,
    AuxiliarySettings,
    CompressionSettings,
    ContextSettings,
    EndpointUrl,
    McpSettings,
    MemorySettings,
    ModelSettings,
    Section,
    SkillsSettings,
    TranscriptionSettings,
)
from chorus_errors import ConfigError
from gateway.schedules.recurrence import check_when, zone

CONFIG_ENV = "CHORUS_CONFIG"
DEFAULT_CONFIG_NAME = "config.yaml"
_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SECRET_WORDS = ("token", "key", "secret", "password")


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def _redis_url(value: str | None) -> str | None:
    """Checked here so `run` and `doctor` say which key is wrong instead of redis-py raising a traceback."""
    if not value:
        return None  # `${REDIS_URL:-}` unset: the embedded backend
    if not value.lower().startswith(REDIS_SCHEMES):
        scheme = value.split("://")[0] + "://" if "://" in value else "no scheme"
        raise ValueError(f"the scheme must be one of {', '.join(REDIS_SCHEMES)} (got {scheme}), "
                         "e.g. redis://127.0.0.1:6379/0; leave it unset for the embedded backend")
    return value


def public_url(url: str) -> str:
    """`url` with any password replaced by `***`, fit for a log line or an error text."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


class RedisSettings(Section):
    url: Annotated[str | None, AfterValidator(_redis_url)] = Field(
        default=None, description="(start) shared coordination for replicas, e.g. redis://127.0.0.1:6379/0; null = in-process",
    )
    key_prefix: str = Field(default="chorus", description="(start) the prefix of every Redis key of this deployment")


class BotLoopGuardSettings(Section):
    """Replies to other bots per chat, counted across replicas; those beyond `max_replies` in a window are dropped."""

    max_replies: int = Field(default=10, ge=0, description="replies to other bots per chat within the window, across replicas; beyond it they are dropped")
    window_seconds: float = Field(default=60.0, gt=0, le=86_400, description="the bot loop guard's window")


# `auto` or a language tag (`zh`, `pt-BR`); a language without a catalogue is answered in English
LANGUAGE_PATTERN = r"^(auto|[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*)$"


def _chat_address(value: str | None) -> str | None:
    """`PLATFORM:CHAT_ID` (`gateway.home_channel`, `schedules.NAME.chat`)."""
    if value is None:
        return None
    platform, _, chat = value.partition(":")
    if not platform or not chat:
        raise ValueError(f"{value!r} is not PLATFORM:CHAT_ID, e.g. telegram:-100123")
    return value


class GatewaySettings(Section):
    agent_cache_size: int = Field(default=128, ge=1, description="live agents kept in memory (least recently used go first)")
    busy_input_mode: Literal["queue", "interrupt", "collect", "steer"] = Field(
        default="queue", description="a message during a turn: queue | interrupt | collect (a burst is one turn) | steer (joins the turn)",
    )
    collect_seconds: float = Field(default=2.0, gt=0, le=60, description="collect: messages of one sender arriving within this gap become one turn")
    group_sessions_per_user: bool = Field(default=False, description="true: one session per participant in a group; chats.\"…\".session_scope overrides it")
    group_trigger: Literal["always", "mention", "reply"] = Field(
        default="mention", description="what makes the bot answer in a group: always | mention | reply",
    )
    record_unmentioned: bool = Field(default=True, description="the old name of observe_unmentioned (still read when that is unset)")
    observe_unmentioned: bool | None = Field(
        default=None, description="unanswered group messages reach the model as labelled context, never as the request; null = record_unmentioned",
    )
    edits: Literal["follow", "ignore"] = Field(
        default="follow", description="follow: an edit replaces the queued text, or follows as \"[edited] …\"; ignore: edits are dropped",
    )
    unknown_sender: Literal["refuse", "silent"] = Field(
        default="refuse", description="a sender the allowlist refuses gets: refuse (a short, rate-limited reply) | silent",
    )
    group_errors: Literal["reply", "react", "silent"] = Field(
        default="reply", description="how a failed turn shows in a group: reply | react | silent (DMs always get a short line)",
    )
    max_iterations: int = Field(default=12, ge=1, le=100, description="tool-calling rounds per turn")
    max_message_chars: int = Field(default=32_000, ge=100, description="longer inbound messages are refused with a clear reply")
    profile: str = Field(default="default", description="the <profile> part of session keys")
    shutdown_grace_seconds: float = Field(
        default=10.0, ge=0, le=600, description="on SIGTERM, turns in flight get this long; the rest re-run after a restart",
    )
    # Replicas on one PostgreSQL store: a heartbeat every third of this keeps a replica's work its own (a killed
    # replica is dead at once; one whose machine vanished after this long). Also the TTL of Redis / in-process
    # session locks.
    lease_seconds: float = Field(
        default=30.0, ge=1, le=600, description="replicas on one store: a replica silent this long is taken over; also the session lock TTL",
    )
    max_attachment_bytes: int = Field(default=10_000_000, ge=1024, description="pictures, voice notes and files are downloaded up to this size")
    max_text_file_bytes: int = Field(default=65_536, ge=256, description="text files up to this size are inlined in the turn")
    # (start) every listener (web chat, admin + Slack events, Telegram webhook): a connection that sends no complete
    # request within this is closed, and so is an idle keep-alive connection; beyond max_connections per port new
    # connections are closed at once rather than queued.
    read_timeout_seconds: float = Field(default=30.0, gt=0, le=3600, description="(start) a connection that sends no complete request within this is closed")
    max_connections: int = Field(default=2000, ge=1, description="(start) per listening port; beyond it new connections are refused, not queued")
    usage_footer: Literal["off", "tokens", "cost"] = Field(default="off", description="off | tokens | cost: a short line under each reply")

    @field_validator("usage_footer", mode="before")
    @classmethod
    def _unquoted_off(cls, value: object) -> object:
        """YAML reads an unquoted `off` as false."""
        return "off" if value is False else value
    allow_bots: Literal["none", "mentions", "all"] = Field(
        default="none", description="none | mentions | all: messages from other bots (ours never trigger us)",
    )
    bot_loop_guard: BotLoopGuardSettings = BotLoopGuardSettings()
    reactions: bool = Field(default=False, description="true: 👀 on receipt, ✅ when answered, ⚠️ when failed (platforms that have reactions)")
    silence_token: str | None = Field(default="NO_REPLY", description="a reply that is exactly this is stored, not sent; null = always sent")
    language: str = Field(
        default="auto", pattern=LANGUAGE_PATTERN,
        description="the bot's own texts: auto (the sender's platform language, else en) | en | zh | es | de | fr | ja | ru | pt",
    )
    home_channel: Annotated[str | None, AfterValidator(_chat_address)] = Field(
        default=None, description="PLATFORM:CHAT_ID for restart, outage and schedule notices; null = none are sent",
    )


class WebhookSettings(Section):
    listen: str = Field(default="0.0.0.0", description="webhook mode: the address the webhook server binds")
    port: int = Field(default=8443, ge=0, le=65535, description="webhook mode: its port; 0 = any free port")
    path: str = Field(default="/telegram", description="webhook mode: the route Telegram posts to")
    url: str | None = Field(default=None, description="webhook mode: the public https URL registered with Telegram")
    secret_token: SecretStr | None = Field(default=None, description="webhook mode: the secret Telegram sends with each update")


class PlatformAccess(Section):
    enabled: bool = Field(default=False, description="connect this platform")
    allowed_users: list[str] = Field(default_factory=list, description="user ids (or unique @handles) who may talk to the bot; deny by default")
    allowed_chats: list[str] = Field(default_factory=list, description="chat ids where anyone may talk to the bot")
    allow_all_users: bool = Field(default=False, description="true: anyone may talk to the bot on this platform")
    require_mention: bool = Field(default=True, description="in groups, answer only when mentioned or replied to")
    admins: list[str] = Field(default_factory=list, description="user ids who may /new /reset /compress /model in groups; [] = anyone allowed")
    pairing: bool = Field(default=False, description="true: an unknown DM sender gets a one-time code; `chorus pairing approve CODE` admits them")

    @field_validator("allowed_users", "allowed_chats", "admins", mode="before")
    @classmethod
    def _ids_as_strings(cls, value: object) -> object:
        """Ids may be written as numbers or strings in YAML; they are compared as strings."""
        if isinstance(value, list):
            return [str(item) if isinstance(item, int) else item for item in value]
        return value


class TelegramSettings(PlatformAccess):
    token: SecretStr | None = Field(default=None, description="the bot token from @BotFather (TELEGRAM_BOT_TOKEN)")
    base_url: str | None = Field(default=None, description="a self-hosted Bot API server; null = api.telegram.org")
    mode: Literal["polling", "webhook"] = Field(default="polling", description="how updates arrive: polling | webhook")
    webhook: WebhookSettings = WebhookSettings()


class DiscordSettings(PlatformAccess):
    token: SecretStr | None = Field(default=None, description="the bot token from the Discord developer portal")
    api_base_url: str | None = Field(default=None, description="for a proxy; null = discord.com")
    gateway_url: str | None = Field(default=None, description="the Discord gateway websocket URL; null = the one Discord names")


def _file_origins(value: list[str]) -> list[str]:
    """Each entry is an origin (scheme://host[:port], http or https, nothing after it)."""
    from adapters.fetch import parse_origin  # the adapters' own parser: one definition of an origin

    for entry in value:
        try:
            parse_origin(entry)
        except ValueError as exc:
            raise ValueError(f"{entry!r} is not an origin: {exc} (e.g. https://files.slack.com)") from None
    return value


class SlackSettings(PlatformAccess):
    bot_token: SecretStr | None = Field(default=None, description="the xoxb-… bot token")
    signing_secret: SecretStr | None = Field(default=None, description="events mode: checks that a request came from Slack")
    app_token: SecretStr | None = Field(default=None, description="socket mode: the xapp-… app token")
    mode: Literal["events", "socket"] = Field(default="events", description="how events arrive: events (HTTP) | socket")
    api_base_url: str | None = Field(default=None, description="for a proxy; null = slack.com")
    path: str = Field(default="/slack/events", description="events mode: the Events API route on the admin server")
    # The origins url_private may point at: the only hosts files are fetched from and the bot token is sent to.
    file_hosts: Annotated[list[str], AfterValidator(_file_origins)] = Field(
        default_factory=lambda: ["https://files.slack.com"], description="origins files are fetched from: the only hosts the bot token is sent to")


def _origins(value: list[str]) -> list[str]:
    """`platforms.web.allowed_origins`: each an http(s) origin, scheme://host[:port], nothing after it."""
    for origin in value:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/") or parts.query:
            raise ValueError(f"{origin!r} is not an origin; write scheme://host[:port], e.g. https://chat.example.com")
    return value


class WebSettings(Section):
    enabled: bool = Field(default=True, description="serve the built-in web chat")
    host: str = Field(default="127.0.0.1", description="the address the web chat binds")
    port: int = Field(default=8080, ge=0, le=65535, description="its port; 0 = any free port")
    # auto: no login on a loopback host, a token otherwise; none on another host must be written explicitly.
    auth: Literal["auto", "token", "none"] = Field(default="auto", description="auto: no login on a loopback host, a token otherwise | token | none")
    token: SecretStr | None = Field(default=None, description="the web chat's sign-in token; null = generated under home when one is needed")
    allowed_origins: Annotated[list[str], AfterValidator(_origins)] = Field(
        default_factory=list, description="websocket/POST origins allowed besides the page's own",
    )


class PlatformsSettings(Section):
    telegram: TelegramSettings = TelegramSettings()
    discord: DiscordSettings = DiscordSettings()
    slack: SlackSettings = SlackSettings()
    web: WebSettings = WebSettings()
    console: bool = Field(default=False, description="chat in the terminal")


class AdminSettings(Section):
    host: str = Field(default="127.0.0.1", description="the address of /healthz, /metrics, the operator API and this dashboard")
    port: int = Field(default=9090, ge=0, le=65535, description="their port; 0 = any free port")
    token: SecretStr | None = Field(default=None, description="the operator API's bearer token (everything but health and metrics)")


ToolProgressMode = Literal["off", "new", "all"]


class ToolProgressSettings(Section):
    dms: ToolProgressMode = Field(default="new", description="tool progress lines in DMs: off | new | all")
    groups: ToolProgressMode = Field(default="off", description="tool progress lines in groups: off | new | all")


class RateLimits(Section):
    """`limits.per_user` / `limits.per_chat`: 0 = unlimited."""

    messages_per_minute: int = Field(default=0, ge=0, description="messages in a sliding minute; 0 = unlimited")
    tokens_per_day: int = Field(default=0, ge=0, description="input + output tokens per UTC day; 0 = unlimited")


class GlobalLimits(Section):
    tokens_per_day: int = Field(default=0, ge=0, description="the whole bot's tokens per UTC day; 0 = unlimited")
    cost_per_day: float = Field(default=0, ge=0, description="the whole bot's cost per UTC day in the units of pricing; 0 = unlimited")


class LimitsSettings(Section):
    """`limits`: spend and rate control, counted across replicas (Redis) or in this process."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    per_user: RateLimits = RateLimits()
    per_chat: RateLimits = RateLimits()
    global_: GlobalLimits = Field(default=GlobalLimits(), alias="global")
    exempt_admins: bool = Field(default=True, description="platforms.<p>.admins are never refused by a limit")


class ChatRateLimits(Section):
    """One scope's override in `chats."…".limits` (None: the `limits` value applies)."""

    messages_per_minute: int | None = Field(default=None, ge=0)
    tokens_per_day: int | None = Field(default=None, ge=0)


class ChatLimits(Section):
    """`chats."…".limits`: this chat's `per_user` and `per_chat` limits, key by key."""

    per_user: ChatRateLimits = ChatRateLimits()
    per_chat: ChatRateLimits = ChatRateLimits()


class Price(Section):
    """`pricing.MODEL`: cost per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
class ApprovalSettings(Section):
    """Tools that run only after a person says yes (`tools.approval`, or per chat `chats."…".approval`)."""

    required: list[str] = Field(default_factory=list, description="tool names or globs that run only after a person says yes, e.g. [\"tickets__*\"]")
    approvers: Literal["requester", "admins", "requester_or_admins"] = Field(
        default="requester", description="who may say yes: requester | admins | requester_or_admins",
    )
    timeout_seconds: float = Field(default=300.0, gt=0, le=86_400, description="no answer in time: the model is told \"not approved\"")


class ToolsSettings(Section):
    approval: ApprovalSettings = ApprovalSettings()


class ChatSettings(Section):
    """Per-chat overrides, keyed PLATFORM:CHAT_ID exactly as the CLI scopes chats."""

    system_prompt: str | None = None
    model: str | None = None
    require_mention: bool | None = None
    tools: list[str] | None = None  # allowlist of MCP server or tool names; None -> the default set
    limits: ChatLimits = ChatLimits()
    approval: ApprovalSettings | None = None  # replaces tools.approval for this chat
    busy_input_mode: Literal["queue", "interrupt", "collect", "steer"] | None = None  # None -> gateway.busy_input_mode
    session_scope: Literal["shared", "per_user"] | None = None  # a group's sessions; None -> group_sessions_per_user
    language: str | None = Field(
        default=None, pattern=LANGUAGE_PATTERN, description="the bot's own texts in this chat; null = gateway.language",
    )


class ScheduleSettings(Section):
    """`schedules.NAME`: an operator's job; `cron` (with `timezone`) or a one-shot `at` (ISO time)."""

    cron: str | None = Field(default=None, description="five cron fields, e.g. \"0 9 * * 1-5\"; or give `at`")
    at: str | None = Field(default=None, description="a one-shot ISO 8601 time, e.g. 2026-12-24T09:00 (in `timezone` without an offset)")
    timezone: str = Field(default="UTC", description="the IANA time zone of `cron` and `at`")
    chat: Annotated[str | None, AfterValidator(_chat_address)] = Field(
        default=None, description="PLATFORM:CHAT_ID the job runs in; null: the result goes to gateway.home_channel",
    )
    thread: str | None = Field(default=None, description="the thread or forum topic in that chat; null: the chat itself")
    prompt: str = Field(min_length=1, description="what the job asks the model (or sends as is with deliver_only)")
    deliver_only: bool = Field(default=False, description="true: send `prompt` as it is, no model call")

    @field_validator("cron")
    @classmethod
    def _cron_is_valid(cls, value: str | None) -> str | None:
        if value is not None:
            check_when(cron=value, at=None, timezone="UTC")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone_is_known(cls, value: str) -> str:
        zone(value)
        return value

    @model_validator(mode="after")
    def _one_time_given(self) -> ScheduleSettings:
        """Exactly one of `cron` and `at`, and `at` readable in the job's zone."""
        check_when(cron=self.cron, at=self.at, timezone=self.timezone)
        return self


class SchedulingSettings(Section):
    """`scheduling`: the jobs users add with the `schedule` tool, and catching up after a restart."""

    enabled: bool = Field(default=True, description="false: no job runs and the agent's `schedule` tool is not offered")
    max_jobs_per_chat: int = Field(default=10, ge=0, description="jobs users may add per chat with the `schedule` tool")
    min_interval_minutes: float = Field(default=5, ge=0, description="a user's cron firing more often than this is refused")
    catch_up_minutes: float = Field(default=60, ge=0, description="missed occurrences younger than this run once after a restart")


class StoreSettings(Section):
    url: str | None = Field(default=None, description="(start) null = SQLite under home; postgresql://user@host:5432/db = PostgreSQL")

    @field_validator("url", mode="before")
    @classmethod
    def _blank_is_sqlite(cls, value: object) -> object:
        """`${CHORUS_STORE_URL:-}` with the variable unset reads as "": the SQLite default."""
        return None if isinstance(value, str) and not value.strip() else value


class LoggingSettings(Section):
    level: Literal["debug", "info", "warning", "error"] = Field(default="info", description="debug | info | warning | error")
    format: Literal["console", "json"] = Field(default="console", description="console | json (one JSON object per line)")


class TelemetrySettings(Section):
    """(start) OpenTelemetry traces of each message, exported over OTLP/HTTP; off while `otlp_endpoint` is null."""

    otlp_endpoint: EndpointUrl = Field(
        default=None, description="http://collector:4318 (spans go to …/v1/traces); null: off, the SDK not loaded",
    )
    service_name: str = Field(default="chorus", min_length=1, description="`service.name` of every span")
    sample_ratio: float = Field(
        default=1.0, ge=0, le=1, description="share of messages traced (a taken-over one follows its trace)",
    )


class ChorusConfig(Section):
    home: Path = Field(default=Path("~/.chorus"), description="(start) where state.db, memories/<chat>/ and skills/ live")
    agent: AgentSettings = AgentSettings()
    model: ModelSettings = ModelSettings()
    auxiliary: AuxiliarySettings = AuxiliarySettings()
    compression: CompressionSettings = CompressionSettings()
    memory: MemorySettings = MemorySettings()
    skills: SkillsSettings = SkillsSettings()
    context: ContextSettings = ContextSettings()
    redis: RedisSettings = RedisSettings()
    gateway: GatewaySettings = GatewaySettings()
    platforms: PlatformsSettings = PlatformsSettings()
    admin: AdminSettings = AdminSettings()
    logging: LoggingSettings = LoggingSettings()
    transcription: TranscriptionSettings = TranscriptionSettings()
    chats: dict[str, ChatSettings] = Field(
        default_factory=dict, description="per-chat overrides keyed PLATFORM:CHAT_ID (prompt, model, limits, approval, …); new sessions",
    )
    mcp: McpSettings = McpSettings()
    tool_progress: ToolProgressSettings = ToolProgressSettings()
    tools: ToolsSettings = ToolsSettings()
    store: StoreSettings = StoreSettings()
    limits: LimitsSettings = LimitsSettings()
    pricing: dict[str, Price] = Field(default_factory=dict, description="per model name, per million tokens, e.g. gpt-4o-mini: {input: 0.15, output: 0.60}")
    schedules: dict[str, ScheduleSettings] = Field(
        default_factory=dict, description="the operator's jobs by name: {cron or at, timezone, chat, thread, prompt, deliver_only}",
    )
    scheduling: SchedulingSettings = Field(
        default_factory=SchedulingSettings, description="scheduled jobs: enabled, max_jobs_per_chat, min_interval_minutes, catch_up_minutes",
    )
    telemetry: TelemetrySettings = Field(
        default_factory=TelemetrySettings, description="traces: otlp_endpoint (null = off), service_name, sample_ratio (restart needed)",
    )
    # Dotted key -> the `${NAME}` variables its value was read from, so an empty required value can name them.
    _env_refs: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)

    @property
    def home_dir(self) -> Path:
        return self.home.expanduser()

    def env_hint(self, key: str | None) -> str:
        """A clause naming the environment variables `key` was read from ("" when it names none)."""
        names = self._env_refs.get(key or "", ())
        if not names:
            return ""
        listed = ", ".join(f"${{{name}}}" for name in names)
        return f" (the config reads it from {listed}: export it before starting chorus)"

    @model_validator(mode="after")
    def _chat_models_are_choices(self) -> ChorusConfig:
        """A chat's `model` must be one `/model` could pick: model.name, model.allowed or a fallback's name."""
        choices = {self.model.name, *self.model.allowed, *(f.name for f in self.model.fallbacks)} - {None}
        for chat, settings in self.chats.items():
            if settings.model and settings.model not in choices:
                raise ValueError(
                    f'chats."{chat}".model {settings.model!r} is not model.name, in model.allowed or a fallback; '
                    "add it to model.allowed"
                )
        return self


def interpolate_env(value: object, env: Mapping[str, str], *, path: str = "") -> object:
    """Replace `${NAME}` and `${NAME:-default}` in every string of a loaded YAML tree."""
    if isinstance(value, str):
        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigError(
                f"{path or 'config'}: environment variable {name} is not set; export it or write the value",
                key=path or None,
            )

        return _ENV_PATTERN.sub(substitute, value)
    if isinstance(value, dict):
        return {k: interpolate_env(v, env, path=f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_env(v, env, path=f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def env_references(value: object, *, path: str = "") -> dict[str, tuple[str, ...]]:
    """Dotted key -> names of the `${NAME}` variables in its raw value, for every string of a YAML tree."""
    if isinstance(value, str):
        names = tuple(match.group(1) for match in _ENV_PATTERN.finditer(value))
        return {path: names} if names else {}
    found: dict[str, tuple[str, ...]] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            found.update(env_references(v, path=f"{path}.{k}" if path else str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.update(env_references(v, path=f"{path}[{i}]"))
    return found


def _section_at(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The settings model that holds the keys under `loc` (None when `loc` is not a section, e.g. a free dict)."""
    model: type[BaseModel] = ChorusConfig
    index = 0
    while index < len(loc):
        field = _fields_by_key(model).get(str(loc[index]))
        if field is None:
            return None
        annotation = _unwrap(field.annotation)
        if typing.get_origin(annotation) is dict:  # chats."telegram:1": the next part is a free name
            annotation = _unwrap(typing.get_args(annotation)[1])
            index += 1
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
        index += 1
    return model


def _fields_by_key(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A settings model's fields by the key written in YAML (`limits.global`, not the attribute `global_`)."""
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _unwrap(annotation: object) -> object:
    """`X | None` and `Annotated[X, …]` -> X."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(options) != 1:
                return annotation
            annotation = options[0]
        else:
            return annotation


SHORT_SECTION_KEYS = 8  # an unknown key in a section this small lists the section's keys; a longer list is noise


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """`; did you mean X?` for the closest choice, or "" when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _unknown_key_line(source: str, loc: tuple[str | int, ...]) -> str:
    key = ".".join(str(part) for part in loc)
    section = _section_at(loc[:-1])
    known = sorted(_fields_by_key(section)) if section is not None else []
    hint = did_you_mean(str(loc[-1]), known)
    if not hint and section is not None and loc[:-1] and len(known) <= SHORT_SECTION_KEYS:
        hint = f"; the keys of {'.'.join(str(p) for p in loc[:-1])} are {', '.join(known)}"
    return f"{source}: {key}: unknown key{hint or '; see config.yaml.example for the allowed keys'}"


def _is_secret(key: str) -> bool:
    last = key.rsplit(".", 1)[-1].lower()
    return any(word in last for word in _SECRET_WORDS)


def describe_validation_error(error: ValidationError, source: str) -> str:
    """One line per problem: the dotted key, the value (hidden for secrets) and what is allowed."""
    lines = []
    for problem in error.errors():
        key = ".".join(str(part) for part in problem["loc"])
        if not key:  # a check across sections: its message names the keys; the input is the whole tree
            lines.append(f"{source}: {str(problem['msg']).removeprefix('Value error, ')}")
            continue
        if problem["type"] == "extra_forbidden":
            lines.append(_unknown_key_line(source, tuple(problem["loc"])))
            continue
        given = problem.get("input")
        # A URL may carry a password (redis://:pw@host): never echo one that has credentials.
        hidden = _is_secret(key) or (key.endswith("url") and "@" in str(given))
        shown = "<hidden>" if hidden else repr(given)
        lines.append(f"{source}: {key}: got {shown}; {problem['msg']}")
    return "\n".join(lines)


def parse_config(raw: object, *, source: str = "config", env: Mapping[str, str] | None = None) -> ChorusConfig:
    """Validate an already-parsed YAML tree."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections, got {type(raw).__name__}")
    expanded = interpolate_env(raw, os.environ if env is None else env)
    try:
        config = ChorusConfig.model_validate(expanded)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(
            describe_validation_error(exc, source), key=".".join(str(p) for p in first["loc"]) or None
        ) from None
    config._env_refs = env_references(raw)
    return config


def resolve_config_path(explicit: str | os.PathLike[str] | None, env: Mapping[str, str] | None = None) -> Path | None:
    """`--config`, then `$CHORUS_CONFIG`, then `./config.yaml`; None means built-in defaults."""
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    local = Path(DEFAULT_CONFIG_NAME)
    return local if local.exists() else None


def load_config(
    explicit: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None
) -> ChorusConfig:
    path = resolve_config_path(explicit, env)
    if path is None:
        return ChorusConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror}); check --config") from None
    try:
        raw: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    return resolve_prompt_file(parse_config(raw, source=str(path), env=env), path)


TEST_CLOCK_ENV = "CHORUS_TEST_CLOCK_FILE"


def limits_clock(env: Mapping[str, str] | None = None) -> Callable[[], float]:
    """The clock the spend limits read: the wall clock, or (tests only) the epoch seconds written in a file.

    `CHORUS_TEST_CLOCK_FILE=PATH` lets a test move a running `chorus run` across a day boundary
    without waiting; the file is read on every check. Never set it in production.
    """
    env = os.environ if env is None else env
    name = env.get(TEST_CLOCK_ENV)
    if not name:
        return time.time
    path = Path(name)

    def file_clock() -> float:
        try:
            return float(path.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return time.time()

    return file_clock


PROMPT_FILE_KEY = "agent.system_prompt_file"


def resolve_prompt_file(config: ChorusConfig, path: Path) -> ChorusConfig:
    """`agent.system_prompt_file` made absolute (relative to the config file) and checked readable."""
    name = config.agent.system_prompt_file
    if not name:
        return config
    prompt = Path(name).expanduser()
    if not prompt.is_absolute():
        prompt = path.parent / prompt
    if not prompt.is_file():
        raise ConfigError(
            f"{path}: {PROMPT_FILE_KEY}: {prompt} is not a readable file; write the path relative to the config file",
            key=PROMPT_FILE_KEY,
        )
    agent = config.agent.model_copy(update={"system_prompt_file": str(prompt)})
    return config.model_copy(update={"agent": agent})
