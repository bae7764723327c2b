"""Building the engine from configuration: context.engine, the summariser chain, the aux-window check."""
from __future__ import annotations

from collections.abc import Sequence

import pytest
from structlog.testing import capture_logs

from agent.context import (
    ContextCompressor,
    ContextEngine,
    FallbackOnly,
    ModelSummarizer,
    build_compressor,
    build_engine,
    build_summarizer,
    register_engine,
)
from agent.context.guarded import GuardedEngine
from agent.context.sections import HandoffSection
from agent.settings import AuxiliaryModelSettings, AuxiliarySettings, CompressionSettings, ContextSettings, ModelSettings
from agent.tokens import TokenCounter, estimate_counter
from chorus_errors import ConfigError

MODEL = ModelSettings(name="main-model", base_url="http://127.0.0.1:9/v1", context_length=200_000, max_tokens=8_000)


def test_unknown_engine_is_a_config_error_naming_the_key_and_the_choices() -> None:
    """An unknown context.engine is refused (issue 38): the error names the key, the name and the built-in engine."""
    with pytest.raises(ConfigError, match=r"context.engine: no plugin named 'lcm' .*installed: compressor") as caught:
        build_engine(ContextSettings(engine="lcm"), CompressionSettings(), MODEL, AuxiliarySettings(), counter=estimate_counter())
    assert caught.value.key == "context.engine"
    engine = build_engine(ContextSettings(), CompressionSettings(), MODEL, AuxiliarySettings(), counter=estimate_counter())
    assert isinstance(engine, ContextCompressor) and engine.threshold_tokens == 96_000  # (200K - 8K) x 0.5


def test_registered_plugin_engine_is_used_only_when_named() -> None:
    """A registered plugin is built when context.engine names it, never otherwise."""
    built: list[str] = []

    def plugin(settings: CompressionSettings, model_settings: ModelSettings, aux_settings: AuxiliarySettings, *,
               counter: TokenCounter, sections: Sequence[HandoffSection]) -> ContextEngine:
        built.append(model_settings.name or "")
        return build_compressor(settings, model_settings, aux_settings, counter=counter)

    register_engine("test-plugin", plugin)
    build_engine(ContextSettings(), CompressionSettings(), MODEL, AuxiliarySettings(), counter=estimate_counter())
    assert built == []
    engine = build_engine(ContextSettings(engine="test-plugin"), CompressionSettings(), MODEL, AuxiliarySettings(),
                          counter=estimate_counter())
    assert built == ["main-model"] and isinstance(engine, GuardedEngine) and isinstance(engine.inner, ContextCompressor)


def test_summarizer_chain_from_settings() -> None:
    """No model: fallback only; main only; aux first when configured and big enough, else the main model."""
    assert isinstance(build_summarizer(ModelSettings(), AuxiliarySettings()), FallbackOnly)
    main_only = build_summarizer(MODEL, AuxiliarySettings())
    assert isinstance(main_only, ModelSummarizer) and [c.model for c in main_only._clients] == ["main-model"]
    aux = AuxiliarySettings(compression=AuxiliaryModelSettings(model="aux-model", context_length=256_000))
    assert [c.model for c in build_summarizer(MODEL, aux)._clients] == ["aux-model", "main-model"]  # type: ignore[attr-defined]
    small = AuxiliarySettings(compression=AuxiliaryModelSettings(model="tiny", context_length=32_000))
    with capture_logs() as logs:
        chain = build_summarizer(MODEL, small)
    assert [c.model for c in chain._clients] == ["main-model"]  # type: ignore[attr-defined]
    assert [entry["event"] for entry in logs] == ["compression.aux_window_too_small"]
