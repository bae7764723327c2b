"""The scanner's learned layer: a tiny hashed n-gram logistic regression shipped as a JSON weight file.

Owns feature extraction and scoring; the weights (`scanner_model.json`) are produced by
`bench/scanner_train.py` from the "tune" half of tests/data/scanner/ (deterministic: fixed order,
fixed epochs, no randomness). No dependency beyond the standard library, no network.

Why hashed word uni- and bigrams plus a few shape tokens: jailbreak prompts share a register (second
person, persona and rule vocabulary, response-format demands, scripted dialogue) far more than they
share phrases; a linear model over that register generalises to prompts nobody enumerated, while a
high threshold (and the note-shape gate in `_shape.py`) keeps real chat lines out.
"""
from __future__ import annotations

import json
import math
import re
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Final

WEIGHTS_FILE: Final = Path(__file__).with_name("scanner_model.json")
BUCKETS: Final = 1 << 15
_TOKEN = re.compile(r"[^\W\d_][\w']*|\d+|[#*\[\]{}<>|:/]")


def _bucket(feature: str) -> int:
    return zlib.crc32(feature.encode()) & (BUCKETS - 1)


def _shape_tokens(text: str, tokens: list[str]) -> list[str]:
    lines = text.count("\n") + 1
    length = len(text)
    second = sum(1 for token in tokens if token in ("you", "your", "you're", "yourself", "u"))
    shape = [f"__len{min(6, int(math.log2(max(length, 16))) - 4)}", f"__lines{min(4, lines.bit_length())}",
             f"__you{min(4, second.bit_length())}"]
    if tokens and second * 8 >= len(tokens):
        shape.append("__you_dense")
    return shape


def features(text: str) -> list[int]:
    """The hashed feature buckets of one casefolded text (each bucket at most once)."""
    tokens = _TOKEN.findall(text)
    grams = [*tokens, *(f"{a} {b}" for a, b in zip(tokens, tokens[1:])), *_shape_tokens(text, tokens)]
    return sorted({_bucket(gram) for gram in grams})


@lru_cache(maxsize=1)
def _weights() -> tuple[float, dict[int, float]]:
    raw = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    scale = float(raw["scale"])
    return float(raw["bias"]) / scale, {int(key): value / scale for key, value in raw["weights"].items()}


def logit(buckets: list[int], bias: float, weights: dict[int, float]) -> float:
    """The model's log-odds for feature buckets (features are scaled by 1/sqrt(count))."""
    if not buckets:
        return bias
    norm = 1.0 / math.sqrt(len(buckets))
    return bias + norm * sum(weights.get(bucket, 0.0) for bucket in buckets)


def score(text: str) -> float:
    """The probability that `text` (casefolded) is an instruction to the assistant rather than a note."""
    bias, weights = _weights()
    value = logit(features(text), bias, weights)
    return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, value))))
