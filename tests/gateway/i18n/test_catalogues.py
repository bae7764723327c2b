"""Every text the gateway writes itself is in the catalogues, with the same fields in every language.

Mechanical and general: the msgids are read from the code (an AST scan of `gateway/` for `say`, `say_n` and
`msgid` calls), not listed here, so a new text with no catalogue entry fails this test; and no string literal,
f-string or `.format()` reaches a call that sends the gateway's own words (those take a `Phrase`, which mypy
holds to a catalogue lookup).
"""
from __future__ import annotations

import ast
import functools
import string
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import read_po

from agent.loop import CUT_HISTORY_NOTICE, CUT_NOTICE, DROPPED_NOTICE
from agent.model_retry import BUSY_NOTICE
from gateway.i18n import LANGUAGES, say
from gateway.i18n.texts import catalogue_path

GATEWAY = Path(__file__).resolve().parents[3] / "gateway"
REQUIRED_LANGUAGES = ("en", "zh", "es", "de", "fr", "ja", "ru", "pt")
COMPLETE_LANGUAGES = ("en", "zh")
# What every language must say: busy, failures, limits, refusals, /stop, /help and the command menu, approvals.
COMMON_PREFIXES = ("queue.", "access.", "command.", "help.", "stop.", "limit.hit", "limit.messages", "limit.tokens",
                   "limit.cost", "limit.scope.", "turn.", "approval.", "stream.")
LOOKUPS = {"say": 1, "say_n": 1, "msgid": 0}  # the function, and which argument is the msgid
# Calls that put the gateway's own words in a chat: none may be handed text that did not come from a lookup.
SENDING_CALLS = frozenset({"send_notice", "edit_notice", "send_text", "edit_text", "_answer", "_deliver", "_tell_failure",
                           "reply", "post_text", "post_prompt", "answer_press", "answer_privately"})
OPERATOR_PACKAGES = ("admin", "cli", "doctor")  # the operator's API, CLI and doctor speak English to the operator


@functools.cache
def _sources() -> tuple[tuple[Path, ast.Module], ...]:
    return tuple((path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
                 for path in sorted(GATEWAY.rglob("*.py")))


def _literal_strings(node: ast.expr) -> list[str]:
    """The msgids an argument can be: a literal, or either branch of `"a" if x else "b"`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _literal_strings(node.body) + _literal_strings(node.orelse)
    return []


def _name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


@functools.cache
def msgids_in_code() -> dict[str, str]:
    """Every msgid the gateway looks up, with where it is used."""
    found: dict[str, str] = {}
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (index := LOOKUPS.get(_name(node))) is not None and len(node.args) > index:
                for key in _literal_strings(node.args[index]):
                    found.setdefault(key, f"{path.relative_to(GATEWAY.parent)}:{node.lineno}")
    return found


def _catalogue(language: str) -> Catalog:
    with catalogue_path(language).open("rb") as po:
        return read_po(po, locale=language)


def _translated(catalogue: Catalog) -> dict[str, Message]:
    return {str(m.id[0] if isinstance(m.id, tuple) else m.id): m for m in catalogue if m.id and not m.fuzzy
            and all(m.string if isinstance(m.string, tuple) else (m.string,))}


def _fields(text: str) -> set[str]:
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(text) if name}


def _forms(message: Message) -> tuple[str, ...]:
    return message.string if isinstance(message.string, tuple) else (message.string,)


def test_the_scan_finds_the_gateways_texts() -> None:
    """The scan is not vacuous: it sees texts from every corner that writes to a chat."""
    used = msgids_in_code()
    assert len(used) > 100
    for key in ("turn.failed", "limit.hit", "access.refused", "queue.queued", "help.title", "approval.button.approve",
                "command.help.description", "compress.started", "media.voice_off"):
        assert key in used, key


def test_every_required_language_has_a_catalogue() -> None:
    assert set(REQUIRED_LANGUAGES) <= set(LANGUAGES)


@pytest.mark.parametrize("language", COMPLETE_LANGUAGES)
def test_every_text_in_the_code_is_in_the_complete_catalogues(language: str) -> None:
    translated = _translated(_catalogue(language))
    missing = {key: where for key, where in msgids_in_code().items() if key not in translated}
    assert not missing, f"{language} lacks: {missing}"


@pytest.mark.parametrize("language", sorted(set(REQUIRED_LANGUAGES) - set(COMPLETE_LANGUAGES)))
def test_every_common_text_is_in_the_other_catalogues(language: str) -> None:
    translated = _translated(_catalogue(language))
    common = [key for key in msgids_in_code() if key.startswith(COMMON_PREFIXES)]
    assert len(common) > 60
    assert sorted(key for key in common if key not in translated) == []


def test_no_catalogue_holds_a_text_the_code_no_longer_uses() -> None:
    used = msgids_in_code()
    for language in LANGUAGES:
        stale = sorted(set(_translated(_catalogue(language))) - set(used))
        assert stale == [], f"{language}: {stale}"


@pytest.mark.parametrize("language", [lang for lang in REQUIRED_LANGUAGES if lang != "en"])
def test_translations_keep_the_english_fields_and_plural_forms(language: str) -> None:
    """A translation fills exactly the English text's fields; a plural entry has every form its language has."""
    english = _translated(_catalogue("en"))
    catalogue = _catalogue(language)
    for key, message in _translated(catalogue).items():
        source = english[key]
        wanted = set().union(*(_fields(form) for form in _forms(source)))
        forms = _forms(message)
        if isinstance(source.id, tuple):
            assert isinstance(message.id, tuple), f"{language} {key}: not a plural entry"
            assert len(forms) == catalogue.num_plurals, f"{language} {key}: {len(forms)} forms"
            got = set().union(*(_fields(form) for form in forms))
            assert wanted - {"n"} <= got <= wanted, f"{language} {key}: {got} vs {wanted}"
            for form in forms:  # a form may spell the number out, never invent a field
                assert _fields(form) <= wanted, f"{language} {key}: {form!r}"
        else:
            assert _fields(message.string) == wanted, f"{language} {key}: {message.string!r}"
        for form in forms:
            form.format_map({name: 1 for name in wanted})  # formats: braces balanced, specs valid for numbers


def test_no_literal_text_reaches_a_sending_call() -> None:
    """Notices, replies and refusals carry Phrases: a literal, f-string or `.format()` handed to a sending call fails."""
    offenders = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _name(node) not in SENDING_CALLS:
                continue
            for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
                literal = (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value) \
                    or isinstance(arg, ast.JoinedStr) \
                    or (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "format")
                if literal:
                    offenders.append(f"{path.relative_to(GATEWAY.parent)}:{node.lineno}")
    assert offenders == []


def test_only_the_catalogue_makes_a_phrase() -> None:
    """`Phrase(...)` is called in gateway/i18n alone; everywhere else a Phrase comes from a lookup."""
    made = [f"{path.relative_to(GATEWAY.parent)}:{node.lineno}" for path, tree in _sources()
            if "i18n" not in path.parts for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _name(node) == "Phrase"]
    assert made == []


def test_no_sentence_constants_are_left_outside_the_catalogue() -> None:
    """The old convention (`SOMETHING_TEXT = "…"` beside the code) is gone from everything that talks to chats."""
    left = []
    for path, tree in _sources():
        if any(part in OPERATOR_PACKAGES for part in path.relative_to(GATEWAY).parts[:-1]):
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant | ast.JoinedStr) \
                    and isinstance(getattr(node.value, "value", ""), str):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if any(name.endswith(("_TEXT", "_NOTICE")) for name in names):
                    left.append(f"{path.relative_to(GATEWAY.parent)}:{node.lineno} {names}")
    assert left == []


def test_the_agents_notices_are_said_in_english_as_the_agent_wrote_them() -> None:
    assert [say("en", key) for key in ("turn.model_busy", "turn.cut", "turn.cut_history", "turn.dropped")] == [
        BUSY_NOTICE, CUT_NOTICE, CUT_HISTORY_NOTICE, DROPPED_NOTICE]
