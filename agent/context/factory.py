"""Building the context engine from configuration (docs/design.md §3.1).

Owns `build_compressor` (the built-in engine with its summariser: the
`auxiliary.compression` model first, the main model as fallback), the engine
registry behind `context.engine` (a plugin is never enabled implicitly; an
unknown name falls back to the built-in engine with a warning) and the
auxiliary-window feasibility check. Constructs clients without I/O.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog
from pydantic import SecretStr

from agent.context._summarizer import FallbackOnly, ModelSummarizer, Summarizer
from agent.context.compressor import ContextCompressor
from agent.context.engine import ContextEngine, EngineState
from agent.context.sections import HandoffSection
from agent.model_client import ModelClient, OpenAIModelClient
from agent.model_windows import WindowSource
from agent.settings import AuxiliarySettings, CompressionSettings, ContextSettings, ModelSettings
from agent.tokens import TokenCounter

log = structlog.get_logger(__name__)

BUILTIN_ENGINE = "compressor"


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
) -> ContextEngine:
    """The engine `context.engine` names; an unknown name gets the built-in one and a warning."""
    name = context.engine
    if name != BUILTIN_ENGINE:
        factory = _ENGINES.get(name)
        if factory is not None:
            return factory(settings, model_settings, aux_settings, counter=counter, sections=sections)
        log.warning(
            "context.unknown_engine", engine=name, known=sorted([BUILTIN_ENGINE, *_ENGINES]), using=BUILTIN_ENGINE
        )
    return build_compressor(settings, model_settings, aux_settings, counter=counter, sections=sections)
