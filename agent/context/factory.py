"""Building the context engine from configuration (docs/design.md §3.1).

Owns `build_compressor` (the built-in engine with its summariser: the
`auxiliary.compression` model first, the main model as fallback), the engine
registry behind `context.engine` (engines registered in-process, then the
`chorus.context_engines` entry points; a plugin is never enabled implicitly;
`resolve_engine` makes an unknown name a `ConfigError` at start, and a plugin
engine always runs inside a `GuardedEngine`) and the auxiliary-window
feasibility check. Constructs clients without I/O.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import structlog
from pydantic import SecretStr

from agent.context._summarizer import FallbackOnly, ModelSummarizer, Summarizer
from agent.context.compressor import ContextCompressor
from agent.context.engine import ContextEngine, EngineState
from agent.context.guarded import GuardedEngine
from agent.context.sections import HandoffSection
from agent.model_client import ModelClient, OpenAIModelClient
from agent.model_windows import WindowSource
from agent.plugins import CONTEXT_ENGINES, PluginErrorSink, installed_names, load_plugin
from agent.settings import AuxiliarySettings, CompressionSettings, ContextSettings, ModelSettings
from agent.tokens import TokenCounter
from chorus_errors import ConfigError

log = structlog.get_logger(__name__)

BUILTIN_ENGINE = "compressor"
CONFIG_KEY = "context.engine"


class EngineFactory(Protocol):
    """Builds a plugin engine from the same inputs as the built-in one."""

    def __call__(
        self,
        settings: CompressionSettings,
        model_settings: ModelSettings,
        aux_settings: AuxiliarySettings,
        *,
        counter: TokenCounter,
        sections: Sequence[HandoffSection],
    ) -> ContextEngine: ...


_ENGINES: dict[str, EngineFactory] = {}


def register_engine(name: str, factory: EngineFactory) -> None:
    """Make a plugin engine selectable as `context.engine: <name>` (it is used only when configured)."""
    if name == BUILTIN_ENGINE:
        raise ValueError(f"{BUILTIN_ENGINE!r} is the built-in engine; register the plugin under another name")
    _ENGINES[name] = factory


def engine_names() -> tuple[str, ...]:
    """Every name `context.engine` accepts: the built-in one, registered engines, installed entry points."""
    return (BUILTIN_ENGINE, *sorted({*_ENGINES, *installed_names(CONTEXT_ENGINES)}))


def resolve_engine(name: str) -> EngineFactory | None:
    """The factory of the plugin engine `name` (None: the built-in engine); an entry point is imported once.

    Raises:
        ConfigError: no engine has that name (the message lists the installed ones), or its module failed to import.
    """
    if name == BUILTIN_ENGINE:
        return None
    factory = _ENGINES.get(name)
    if factory is None:
        loaded = load_plugin(CONTEXT_ENGINES, name, key=CONFIG_KEY, builtin=(BUILTIN_ENGINE, *sorted(_ENGINES)))
        if not callable(loaded):
            raise ConfigError(f"{CONFIG_KEY}: the plugin {name!r} is not a class or a factory", key=CONFIG_KEY)
        factory = cast(EngineFactory, loaded)
        _ENGINES[name] = factory
    return factory


def _main_client(model_settings: ModelSettings) -> OpenAIModelClient | None:
    if not model_settings.name:
        return None
    return OpenAIModelClient(
        model=model_settings.name,
        base_url=model_settings.base_url,
        api_key=model_settings.api_key.get_secret_value() if model_settings.api_key else None,
        timeout_seconds=model_settings.timeout_seconds,
    )


@dataclass(frozen=True, slots=True)
class AuxiliaryEndpoint:
    """Where summaries go when they do not go to the main model."""

    model: str | None
    base_url: str | None
    api_key: SecretStr | None


def auxiliary_endpoint(model_settings: ModelSettings, aux_settings: AuxiliarySettings) -> AuxiliaryEndpoint | None:
    """The summary model's endpoint, or None when the main model summarises (the runtime and doctor both ask here).

    `provider: main` always summarises on the main model; `auto` uses `auxiliary.compression` when it names a
    model or an endpoint, filling what it leaves out from the main model.
    """
    aux = aux_settings.compression
    if aux.provider == "main" or (not aux.model and not aux.base_url):
        return None
    return AuxiliaryEndpoint(
        model=aux.model or model_settings.name,
        base_url=aux.base_url or model_settings.base_url,
        api_key=aux.api_key or model_settings.api_key,
    )


def _aux_client(model_settings: ModelSettings, aux_settings: AuxiliarySettings) -> OpenAIModelClient | None:
    aux = aux_settings.compression
    endpoint = auxiliary_endpoint(model_settings, aux_settings)
    if endpoint is None:
        return None
    if aux.context_length is not None and aux.context_length < model_settings.context_length:
        log.warning(
            "compression.aux_window_too_small",
            aux_model=aux.model,
            aux_context_length=aux.context_length,
            context_length=model_settings.context_length,
            fix="choose an auxiliary.compression model with a window at least the main model's; using the main model",
        )
        return None
    return OpenAIModelClient(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key.get_secret_value() if endpoint.api_key else None,
        timeout_seconds=aux.timeout_seconds,
    )


def build_summarizer(model_settings: ModelSettings, aux_settings: AuxiliarySettings) -> Summarizer:
    """The auxiliary model (if configured and big enough) with the main model behind it."""
    main: ModelClient | None = _main_client(model_settings)
    aux: ModelClient | None = _aux_client(model_settings, aux_settings)
    if main is None and aux is None:
        return FallbackOnly()
    return ModelSummarizer(main, aux)


def build_compressor(
    settings: CompressionSettings,
    model_settings: ModelSettings,
    aux_settings: AuxiliarySettings,
    *,
    counter: TokenCounter,
    sections: Sequence[HandoffSection] = (),
    summarizer: Summarizer | None = None,
    state: EngineState | None = None,
    now: Callable[[], float] = time.time,
    context: ContextSettings | None = None,
    window: WindowSource | None = None,
) -> ContextCompressor:
    """The built-in `ContextCompressor` for this configuration.

    Args:
        summarizer: overrides the one built from the model settings
            (`FallbackOnly()` for no network).
        context: the `context` section; a `context.engine` other than the
            built-in one is warned about here (use `build_engine` to get a
            registered plugin engine).
        window: the active model's effective window (learned limits, fallbacks); None: `context_length`.
    """
    if context is not None and context.engine != BUILTIN_ENGINE:
        known = context.engine in _ENGINES
        log.warning(
            "context.unknown_engine" if not known else "context.plugin_engine_ignored",
            engine=context.engine,
            using=BUILTIN_ENGINE,
            fix="use build_engine() for a registered plugin engine" if known else "set context.engine: compressor",
        )
    return ContextCompressor(
        settings,
        context_length=model_settings.context_length,
        max_tokens=model_settings.max_tokens,
        model=model_settings.name or "",
        summarizer=summarizer if summarizer is not None else build_summarizer(model_settings, aux_settings),
        counter=counter,
        now=now,
        sections=sections,
        state=state,
        window=window,
    )


def build_engine(
    context: ContextSettings,
    settings: CompressionSettings,
    model_settings: ModelSettings,
    aux_settings: AuxiliarySettings,
    *,
    counter: TokenCounter,
    sections: Sequence[HandoffSection] = (),
    on_error: PluginErrorSink | None = None,
) -> ContextEngine:
    """The engine `context.engine` names; a plugin engine comes wrapped in a `GuardedEngine`.

    Raises:
        ConfigError: the name is unknown, the plugin failed to import, its factory raised or made no ContextEngine.
    """
    name = context.engine
    factory = resolve_engine(name)
    if factory is None:
        return build_compressor(settings, model_settings, aux_settings, counter=counter, sections=sections)
    try:
        engine = factory(settings, model_settings, aux_settings, counter=counter, sections=sections)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"{CONFIG_KEY}: the context engine {name!r} failed to start: {type(exc).__name__}: {exc}. "
            f"Fix it, or set {CONFIG_KEY}: {BUILTIN_ENGINE}",
            key=CONFIG_KEY,
        ) from exc
    if not isinstance(engine, ContextEngine):
        raise ConfigError(
            f"{CONFIG_KEY}: the context engine {name!r} made a {type(engine).__name__}, not a ContextEngine "
            "(agent.context.engine)",
            key=CONFIG_KEY,
        )
    builtin = build_compressor(settings, model_settings, aux_settings, counter=counter, summarizer=FallbackOnly())
    return GuardedEngine(engine, name=name, sizes=(builtin.threshold_tokens, builtin.context_length), on_error=on_error)
