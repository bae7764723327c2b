"""The ASCII twins of the fact patterns find exactly what the patterns find on ASCII text."""
from __future__ import annotations

import random
import re

from agent.context import _fact_gates, _fact_patterns, _facts, _key_values, _statements
from agent.context._ascii import ascii_twin, lead_bound, lowered_matches, lowered_twin
from agent.context._ruleset import RULESET

# Pieces that reach the patterns' branches, and characters where the two modes could differ: both cases, the
# ASCII whitespace Unicode adds (U+001C..U+001F), separators.
_PIECES = (
    "the ", "is ", "port ", "v1.2.3", "10.0.0.1:80", "http://x.y/z", "www.a.b", "2020-01-01", "5 ms", "4pm", "PR #123",
    "issue 42", "my name is Bob", "set timeout to 5s", "don't ", "never ", "foo_bar", "FooBar", "ABC12", "deadbeef1",
    "a@b.cd", "~/x/y.py", "C:\\x", "==1.2", "python3.11", "jan 5", "$5", "we decided", "password is x", "Key: val",
)
_CHARS = "aAbBsSkKiIeEtTnN019 _-./:\\@#=`\"'\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f,;()[]$%"


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        parts = [
            rng.choice(_PIECES) if rng.random() < 0.5 else "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 6)))
            for _ in range(rng.randint(1, 8))
        ]
        texts.append("".join(parts))
    return texts


def _patterns() -> list[re.Pattern[str]]:
    """Every compiled pattern the extraction modules hold, in module globals, tuples and dicts."""
    found: dict[int, re.Pattern[str]] = {}

    def add(value: object) -> None:
        if isinstance(value, re.Pattern):
            found[id(value)] = value
        elif isinstance(value, tuple):
            for item in value:
                add(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                add(key)
                add(item)

    for module in (_fact_patterns, _statements, _fact_gates, _facts):
        for value in vars(module).values():
            add(value)
    add(tuple(c.pattern for c in RULESET.compiled))  # the fact rules
    return list(found.values())


def _found(pattern: re.Pattern[str], text: str) -> list[tuple[object, ...]]:
    return [(match.span(), match.groups()) for match in pattern.finditer(text)]


def test_every_twin_finds_what_its_pattern_finds_on_ascii_text() -> None:
    patterns = _patterns()
    assert len(patterns) > 100
    texts = _texts(600, seed=7)
    differing = [
        (pattern.pattern, text)
        for pattern in patterns
        for text in texts + [text.lower() for text in texts]
        if _found(pattern, text) != _found(ascii_twin(pattern), text)
    ]
    assert differing == []


def test_unicode_whitespace_of_ascii_stays_whitespace() -> None:
    pattern = re.compile(r"a\sb|[^\s]+")
    assert _found(ascii_twin(pattern), "a\x1cb x\x1fy") == _found(pattern, "a\x1cb x\x1fy")
    assert _found(re.compile(r"\s", re.ASCII), "a\x1cb") != _found(re.compile(r"\s"), "a\x1cb")  # what widening fixes


def test_a_pattern_naming_a_case_partner_of_ascii_has_no_twin() -> None:
    for source in ("stra\u017fe", "[\u0100-\u0200]x", "\\u212aelvin"):
        pattern = re.compile(source, re.IGNORECASE)
        assert ascii_twin(pattern) is pattern
    in_class = re.compile(r"[^\S]")
    assert ascii_twin(in_class) is in_class  # a `\S` inside a class is not rewritten: the pattern itself


def test_the_words_of_ascii_text_are_read_as_the_table_reads_them() -> None:
    """`words_of` reads ASCII text through a byte table: the same words as the character table."""
    texts = [f"a{chr(code)}b {chr(code)}c" for code in range(128)] + _texts(300, seed=9)
    assert all(_statements.words_of(t) == frozenset(t.translate(_statements._SEPARATORS).split()) for t in texts)


def test_every_lowered_twin_finds_what_its_pattern_finds() -> None:
    """A case-blind pattern's `lowered_twin`, run on the lower-cased ASCII text, gives its matches (read again on
    the text, groups and all); the twins of the extraction modules' patterns are compared on generated text."""
    texts = _texts(600, seed=11) + ["The Door CODE is 4471", "SET the Timeout TO 5s", "What's The PIN?", "Key: Val"]
    lowered = [(pattern, finder) for pattern in _patterns() if (finder := lowered_twin(pattern)) is not None]
    assert len(lowered) > 10
    differing = [
        (pattern.pattern, text)
        for pattern, finder in lowered
        for text in texts
        if _found(pattern, text) != [(m.span(), m.groups()) for m in lowered_matches(pattern, finder, text, text.lower())]
    ]
    assert differing == []
    assert lowered_twin(re.compile("Abc", re.IGNORECASE)) is None  # a capital named
    assert lowered_twin(re.compile("abc")) is None  # not case-blind


def test_the_word_runs_of_ascii_text_are_those_of_the_scan() -> None:
    texts = [f"a{chr(code)}b {chr(code)}c" for code in range(128)] + _texts(300, seed=13)
    assert all(_fact_patterns.word_runs(t) == frozenset(re.findall(r"\w+", t)) for t in texts)


def test_a_token_is_held_where_the_token_scan_finds_one() -> None:
    """`_holds_token` asks a digitless ASCII text only of the forms of `EXACT_TOKEN` that need no digit."""
    rng = random.Random(17)
    texts = ["".join(rng.choice("ab-_. `\"«“xyZ9") for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    texts += _texts(300, seed=19)
    assert all(_statements._holds_token(t) == (_statements.EXACT_TOKEN.search(t) is not None) for t in texts)


def test_an_ascii_text_without_a_capital_names_nobody_and_holds_no_cased_shape() -> None:
    """The name rules need a capital, and both gates the scan for capitals, where an ASCII text is its lower()."""
    names = [c.pattern for c in RULESET.compiled if c.kind == "name"]
    texts = [t.lower() for t in _texts(600, seed=23)] + ["my name is bob", "i am ann", "call me al", "je m'appelle luc"]
    for text in texts:
        assert not any(pattern.search(text) for pattern in names)
        assert _statements.CASED_SHAPES.search(text) is None
    assert names[0].search("my name is Bob") is not None


def test_the_copula_forms_begin_no_earlier_than_their_lead_bound() -> None:
    """`lead_bound` only skips where the copula forms cannot begin: from it they find all they find."""
    texts = [t.lower() for t in _texts(800, seed=29)] + ["so, the door code is 4471", "a-b.c 'x' is y, the port is 80"]
    forms = (
        (_statements.ASSIGNMENTS[12], _statements._COPULA, _statements._COPULA_HELD),
        (_fact_patterns.KEY_VALUE_PATTERNS[2], _key_values._COPULA, _key_values._COPULA_HELD),
    )
    for pattern, anchor, held in forms:
        finder = lowered_twin(pattern)
        assert finder is not None
        for text in texts:
            start = lead_bound(text, anchor, held)
            every = [m.span() for m in finder.finditer(text)]
            assert every == ([] if start < 0 else [m.span() for m in finder.finditer(text, start)]), text
