"""Which language a message is answered in, and what a missing or broken translation falls back to."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po
from pydantic import ValidationError

from gateway.config import ChorusConfig
from gateway.i18n import language_for, say, say_n, sender_language
from gateway.i18n import texts as texts_module


def _config(**gateway: Any) -> ChorusConfig:
    return ChorusConfig.model_validate({"gateway": gateway, "chats": {"telegram:-100": {"language": "de"},
                                                                     "telegram:-200": {"language": "auto"}}})


@pytest.mark.parametrize(("tag", "language"), [
    ("zh-hans", "zh"), ("zh-Hant-TW", "zh"), ("pt-BR", "pt"), ("pt_BR", "pt"), ("de", "de"), ("EN-us", "en"),
    ("ja-JP", "ja"), ("xx", None), ("klingon", None), ("", None), (None, None),
])
def test_a_platform_tag_is_one_of_the_catalogues_languages(tag: str | None, language: str | None) -> None:
    assert sender_language(tag) == language


def test_the_chat_setting_wins_then_the_sender_then_the_gateway_setting() -> None:
    auto = _config()
    assert language_for(auto, "telegram:-100", "zh-hans") == "de"  # chats."…".language
    assert language_for(auto, "telegram:5", "zh-hans") == "zh"  # gateway.language: auto → the sender's
    assert language_for(auto, "telegram:5", "xx-YY") == "en"  # unknown → English
    assert language_for(auto, "telegram:5", None) == "en"
    assert language_for(auto, "telegram:-200", "ru") == "ru"  # a chat may say auto too
    fixed = _config(language="fr")
    assert language_for(fixed, "telegram:5", "zh-hans") == "fr"  # a fixed language beats the sender's
    assert language_for(fixed, "telegram:-100", "zh-hans") == "de"
    assert language_for(_config(language="it"), "telegram:5", "zh") == "en"  # no catalogue: English
    assert language_for(None, "web:x", "ja") == "ja"  # no config (a bare test gateway): as auto


def test_a_malformed_language_setting_is_refused_with_its_key() -> None:
    with pytest.raises(ValidationError, match="gateway.language|language"):
        ChorusConfig.model_validate({"gateway": {"language": "zh hans!"}})


@pytest.fixture
def partial_german(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The German catalogue replaced by one that holds a single text (compiled afresh, then forgotten)."""
    catalogue = Catalog(locale="de", domain="chorus")
    catalogue.add("turn.failed", "Da ging etwas schief.")
    path = tmp_path / "chorus.po"
    with path.open("wb") as po:
        write_po(po, catalogue)
    real = texts_module.catalogue_path
    monkeypatch.setattr(texts_module, "catalogue_path", lambda language: path if language == "de" else real(language))
    texts_module._compiled.cache_clear()
    yield
    texts_module._compiled.cache_clear()


def test_a_text_missing_from_a_language_is_said_in_english(partial_german: None) -> None:
    """Per text, not per language: a catalogue that lacks a msgid says that one text in English."""
    assert say("de", "turn.failed") == "Da ging etwas schief."
    assert say("de", "status.paused") == say("en", "status.paused")
    assert say_n("de", "undo.done", 2) == say_n("en", "undo.done", 2)
    assert say("tlh", "turn.failed") == say("en", "turn.failed")


def test_counts_take_each_languages_plural_forms() -> None:
    assert say_n("en", "undo.done", 1).endswith("(1 message) from this conversation.")
    assert say_n("en", "undo.done", 2).endswith("(2 messages) from this conversation.")
    forms = {say_n("ru", "stop.still_queued", n).split()[1] for n in (1, 3, 5)}
    assert len(forms) == 3  # сообщение / сообщения / сообщений


def test_a_broken_translation_says_the_english_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A translation whose field was mistyped never raises in a turn: that text is said in English."""
    original = texts_module._catalogue

    class Broken:
        def gettext(self, msgid: str) -> str:
            return "{wrong} kaputt"

    monkeypatch.setattr(texts_module, "_catalogue", lambda language: Broken() if language == "de" else original(language))
    assert say("de", "limit.hit", what="5", when="12:00") == say("en", "limit.hit", what="5", when="12:00")
