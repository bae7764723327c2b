"""The scanner against a corpus of hostile notes and benign look-alikes in six languages.

The corpus lives beside this file as data (corpus_hostile.json, corpus_benign.json);
every hostile note must be refused with its expected category, every benign one accepted.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from agent.memory.scanner import scan

HERE = Path(__file__).parent
LANGUAGES = {"en", "de", "fr", "es", "zh", "ru"}


def _load(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((HERE / name).read_text(encoding="utf-8"))
    return data


def test_corpus_is_large_and_multilingual() -> None:
    """At least 60 hostile and 60 benign notes, covering every category and six languages."""
    hostile, benign = _load("corpus_hostile.json"), _load("corpus_benign.json")
    assert len(hostile) >= 60 and len(benign) >= 60
    assert {item["lang"] for item in hostile} >= LANGUAGES
    assert {item["lang"] for item in benign} >= LANGUAGES
    assert {item["category"] for item in hostile} == {
        "prompt_injection", "role_hijack", "system_prompt", "exfiltration", "persistence", "secret", "invisible_unicode",
    }


def test_every_hostile_note_is_refused_and_every_benign_one_accepted() -> None:
    """Hostile notes are refused with their category and a pattern name; benign look-alikes pass."""
    hostile, benign = _load("corpus_hostile.json"), _load("corpus_benign.json")
    missed = [(item["text"], item["category"], scan(item["text"]).describe())
              for item in hostile if scan(item["text"]).category != item["category"]]
    unnamed = [item["text"] for item in hostile if not scan(item["text"]).pattern]
    false_alarms = [(item["text"], scan(item["text"]).describe()) for item in benign if not scan(item["text"]).ok]
    refused = len(hostile) - len(missed)
    accepted = len(benign) - len(false_alarms)
    by_category = Counter(item["category"] for item in hostile)
    print(f"hostile refused {refused}/{len(hostile)}, benign accepted {accepted}/{len(benign)}; "
          f"hostile by category {dict(sorted(by_category.items()))}")
    assert missed == []
    assert unnamed == []
    assert false_alarms == []
    assert (refused, accepted) == (len(hostile), len(benign))
