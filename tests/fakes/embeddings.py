"""Deterministic embeddings for the fake `/v1/embeddings`: words of one synonym group land on one axis.

`concept_vector` maps each word (English by word, Chinese by substring) to a
concept axis when it belongs to a synonym group below, else to a hashed axis
of its own, and returns the unit vector of the counts. So a paraphrase that
shares no word with the original ("call off my plane trip" / "cancel the
flight") is close, and unrelated text is near orthogonal. It measures the
plumbing, not a model's quality.
"""
from __future__ import annotations

import hashlib
import math
import re

DIMENSIONS = 256
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("cancel", "call off", "scrap", "取消"),
    ("flight", "plane", "airplane", "trip", "航班", "飞机"),
    ("car", "automobile", "vehicle", "汽车", "车"),
    ("doctor", "physician", "医生"),
    ("buy", "purchase", "购买", "买"),
    ("cheap", "inexpensive", "affordable", "便宜"),
    ("refund", "reimburse", "money back", "退款"),
    ("meeting", "call", "sync", "会议"),
    ("password", "passphrase", "login", "密码"),
    ("birthday", "anniversary", "生日"),
    ("dog", "puppy", "hound", "狗"),
    ("deploy", "release", "ship", "发布"),
)
_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _axis(word: str) -> int:
    return len(SYNONYMS) + int(hashlib.sha256(word.encode()).hexdigest(), 16) % (DIMENSIONS - len(SYNONYMS))


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def concept_vector(text: str) -> list[float]:
    counts = [0.0] * DIMENSIONS
    lowered = text.lower()
    for axis, group in enumerate(SYNONYMS):
        for term in group:
            if _CJK.search(term) or " " in term:
                hits = lowered.count(term)
                counts[axis] += hits
                lowered = lowered.replace(term, " ")  # "call off" is not also "call"
    singles = {term: axis for axis, group in enumerate(SYNONYMS) for term in group if term.isalnum() and term.isascii()}
    for word in _WORD.findall(lowered):
        stem = _stem(word)
        counts[singles.get(word, singles.get(stem, _axis(stem)))] += 1.0
    norm = math.sqrt(sum(c * c for c in counts)) or 1.0
    return [c / norm for c in counts]
