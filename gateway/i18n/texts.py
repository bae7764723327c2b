"""`Phrase` and the catalogue lookup that alone makes one.

A msgid is a short dotted key (`turn.failed`); its English text lives in
`locales/en/LC_MESSAGES/chorus.po` like every other language's. Each catalogue
is parsed with Babel and compiled to gettext's binary form once, at its first
use, and kept: a lookup is then a dict read. A language whose catalogue lacks a
msgid (or has it with fields that do not format) says that text in English.
"""
from __future__ import annotations

import functools
import gettext
import io
from collections.abc import Callable, Iterable
from importlib import resources
from typing import NewType

import structlog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

log = structlog.get_logger(__name__)

# A text the gateway writes itself. Only `say`, `say_n`, `as_is` and `joined` make one, so a function that
# takes a Phrase (every notice, refusal and command reply) cannot be handed a bare string literal: mypy says so.
Phrase = NewType("Phrase", str)

NOTHING = Phrase("")  # nothing to say (a command answered elsewhere, a button press acknowledged)
DEFAULT_LANGUAGE = "en"
DOMAIN = "chorus"
_LOCALES = resources.files("gateway.i18n").joinpath("locales")
# The languages with a catalogue: one directory each under locales/ (adding one is adding its directory).
LANGUAGES = (DEFAULT_LANGUAGE, *sorted(entry.name for entry in _LOCALES.iterdir()
                                       if entry.is_dir() and entry.name != DEFAULT_LANGUAGE))


def catalogue_path(language: str) -> resources.abc.Traversable:
    return _LOCALES.joinpath(language, "LC_MESSAGES", f"{DOMAIN}.po")


@functools.cache
def _compiled(language: str) -> gettext.GNUTranslations:
    """The language's catalogue compiled once; it falls back to English for a msgid it lacks."""
    with catalogue_path(language).open("rb") as po:
        catalogue = read_po(po, locale=language, domain=DOMAIN)
    binary = io.BytesIO()
    write_mo(binary, catalogue)  # untranslated and fuzzy entries are left out: they fall back
    binary.seek(0)
    compiled = gettext.GNUTranslations(binary)
    if language != DEFAULT_LANGUAGE:
        compiled.add_fallback(_compiled(DEFAULT_LANGUAGE))
    return compiled


def _catalogue(language: str) -> gettext.GNUTranslations:
    return _compiled(language if language in LANGUAGES else DEFAULT_LANGUAGE)


def _filled(language: str, msgid: str, lookup: Callable[[gettext.NullTranslations], str],
            fields: dict[str, object]) -> Phrase:
    try:
        return Phrase(lookup(_catalogue(language)).format_map(fields))
    except (KeyError, IndexError, ValueError):  # a translation with a broken field: English, never a crash
        log.warning("i18n.bad_translation", language=language, msgid=msgid)
        return Phrase(lookup(_compiled(DEFAULT_LANGUAGE)).format_map(fields))


def say(language: str, msgid: str, /, **fields: object) -> Phrase:
    """The text `msgid` in `language` (English where that language lacks it), its `{fields}` filled."""
    return _filled(language, msgid, lambda catalogue: catalogue.gettext(msgid), fields)


def say_n(language: str, msgid: str, n: int, /, **fields: object) -> Phrase:
    """`say` for a text with a count: the plural form of `n` in `language`; `{n}` is filled with it."""
    return _filled(language, msgid, lambda catalogue: catalogue.ngettext(msgid, msgid, n), {"n": n, **fields})


def msgid(key: str) -> str:
    """Marks a msgid kept as data and looked up later (a command's menu line), so the catalogue test finds it."""
    return key


def as_is(text: str) -> Phrase:
    """Words that are not the bot's own (a user's notes, a model or tool name) shown unchanged."""
    return Phrase(text)


def joined(parts: Iterable[Phrase], separator: str = "\n") -> Phrase:
    """Phrases one after another (lines of a reply)."""
    return Phrase(separator.join(parts))


__all__ = ["DEFAULT_LANGUAGE", "DOMAIN", "LANGUAGES", "NOTHING", "Phrase", "as_is", "catalogue_path", "joined", "msgid", "say",
           "say_n"]
