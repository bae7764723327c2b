"""`early-compressor`: the built-in compressor, compressing at 30% of the window instead of the configured share."""
from __future__ import annotations

from collections.abc import Sequence

from agent.context.engine import ContextEngine
from agent.context.factory import build_compressor
from agent.context.sections import HandoffSection
from agent.settings import AuxiliarySettings, CompressionSettings, ModelSettings
from agent.tokens import TokenCounter

THRESHOLD = 0.3


def early_compressor(
    settings: CompressionSettings,
    model_settings: ModelSettings,
    aux_settings: AuxiliarySettings,
    *,
    counter: TokenCounter,
    sections: Sequence[HandoffSection],
) -> ContextEngine:
    early = settings.model_copy(update={"threshold": THRESHOLD})
    return build_compressor(early, model_settings, aux_settings, counter=counter, sections=sections)
