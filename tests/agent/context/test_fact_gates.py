"""The cheap gates in front of the fact patterns are exact: with them or without them, extraction is the same.

A gate may only skip a pattern (or a line) that could not have matched; these tests run extraction with the
gates and with every gate forced open over varied text (the repository's test sessions, the extraction table
and generated sentences in the ledger's languages) and compare the facts.
"""
from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.context import _fact_gates, _fact_patterns, _facts, _key_values, _rule_compiler, _ruleset, _statements
from agent.context._facts import Speaker, extract_facts
from agent.context._literals import literals
from tests.agent.context.test_ledger_extraction import CASES

DATA = Path(__file__).resolve().parents[2] / "data"
ALWAYS = re.compile("")

# One phrase per branch of the constraint and decision patterns, in each language (see `_fact_patterns`).
RULES = (
    "never", "always", "must", "mustn't", "must not", "should", "shouldn't", "avoid", "prefer", "preferred",
    "make sure", "ensure", "no longer", "not allowed", "forbidden", "prohibited", "mandatory", "required",
    "only use", "use only", "stop using", "under no circumstances", "at all times", "i'd rather", "i would rather",
    "don't", "dont", "do not", "doesn't need", "please don't", "and don't", "nie", "niemals", "immer", "stets",
    "muss", "müssen", "musst", "müsst", "darf", "dürfen", "darfst", "dürft", "sollst", "sollt", "sollte",
    "sollten", "auf keinen fall", "keinesfalls", "vermeiden", "bevorzugen", "bitte nicht", "bitte keinen",
    "verboten", "erforderlich", "ausschließlich", "nur noch", "jamais", "toujours", "surtout pas", "il ne faut",
    "dois", "doit", "doivent", "devez", "devons", "interdit", "obligatoire", "évitez", "préférer", "préfère",
    "uniquement", "ne touche pas", "n'oublie jamais", "nunca", "siempre", "jamás", "debes", "deben", "debemos",
    "hay que", "tienes que", "tenemos que", "evitar", "prefiero", "preferimos", "prohibido", "obligatorio",
    "únicamente", "no toques", "no borres", "永远不要", "不要", "从不", "绝不", "决不", "总是", "始终", "必须", "务必",
    "一定要", "禁止", "不能", "不得", "请勿", "不许", "不准", "只能", "只用", "偏好", "更喜欢", "宁愿", "避免", "别",
    "никогда", "всегда", "нельзя", "должен", "должна", "должны", "обязательно", "запрещено", "предпочитаю",
    "избегайте", "только", "ни в коем случае", "не трогай", "не делайте",
    "decided", "decision", "we'll go with", "we will use", "let's stick with", "lets switch to", "going with",
    "agreed", "settled on", "we chose", "confirmed", "the plan is", "entschieden", "wir nehmen", "vereinbart",
    "décidé", "on part sur", "on garde", "convenu", "decidimos", "vamos con", "acordado", "决定", "就用", "采用",
    "定了", "решили", "договорились", "будем использовать", "подтверждено",
)
VALUES = (
    "port 8443", "v2.3.1", "#1234", "ABC-123", "foo_bar", "/etc/app/config.yaml", "src/main.py", "https://x.io/a",
    "www.example.org/x", "ops@example.com", "10:30 pm", "7am", "2024-01-02", "3/4/24", "Jan 5th", "python 3.11",
    "requests==2.31", "$300", "512 MB", "45 seconds", "30秒", "localhost:6380", "10.0.0.1:80", "C:\\logs\\x",
    "`make test`", "CamelCase", "QX77B", "deadbeef1", "version 2", "bug 4711", "the code is 4471", "pin 0042",
    "the value of the timeout is 30", "set the timeout to 45 s", "timeout = 30s", "we agreed on 8080 for the port",
    "端口是8080", "значение порта 6380", "把端口设为8080", "my name is Ann", "меня зовут Иван", "我叫小王",
    "the wifi password is swordfish", "the door code is banana", "das passwort lautet apfelbaum", "pin: tulip",
    "postgresql14", "nginx v1.25", "e3b0c44298fc", "9ABCDE", "docs/notes.txt", "~/bin/run", "Sep 3", "OPS-7",
    "at 9 pm", "192.168.0.10", "db.internal:5432", "12月3日", "x2.5.1", "MyHTTPServer2", "a_b_c", "(5 GB)",
)
FILLERS = ("ok", "so", "well", "hmm", "yes", "the deploy", "on fridays", "tabs", "main", "it", "this one", "thanks")
TEMPLATES = (
    "{r} {f}", "{R} {f} {v}", "{f}, {r} {f}.", "{f}. {R} {f}!", "- {r} {f} {v}", "nick: {r} {f}", "{f} ({r} {f})",
    "{f}; {r} {v}", "{f} {v}\n{R} {f}", "{v} - {r} {f}", "{f}。{r}{f}", "{F} {R} {V}", "{f} {v} {f}?", "{v}",
    "{f} {v}\r\n{f} {r}", "{f}\u2028{r} {v}", "İ {r} {f} {v}",
)


def _generated(count: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(count):
        rule, value, filler = rng.choice(RULES), rng.choice(VALUES), rng.choice(FILLERS)
        yield rng.choice(TEMPLATES).format(
            r=rule, R=rule.capitalize(), v=value, V=value.upper(), f=filler, F=filler.upper()
        )


def _session_texts() -> Iterator[str]:
    for path in sorted(DATA.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for message in json.loads(line).get("messages", []):
                content = message.get("content")
                if isinstance(content, str) and content.strip():
                    yield content[:4000]


def _corpus() -> list[str]:
    texts = [message for _, _, message, _ in CASES]
    texts += list(_session_texts())
    texts += list(_generated(3000, seed=18))
    return texts


def _extract_all(texts: list[str]) -> list[tuple[tuple[_facts.Fact, ...], ...]]:
    _facts.extract_facts.cache_clear()
    _facts.classify.cache_clear()
    _key_values.key_value_of.cache_clear()
    speakers: tuple[Speaker, ...] = ("user", "assistant")
    return [tuple(extract_facts(text, speaker) for speaker in speakers) for text in texts]


def _open_gates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every literal gate in front of the patterns passes, and every line of an assistant message is read."""
    # The rules compiled plain: no gate, no twin, every family and pattern run, every assistant line read.
    plain = _ruleset.compile_ruleset(fast=False)
    monkeypatch.setattr(_facts, "RULESET", plain)
    monkeypatch.setattr(_facts, "_ASCII_SENTENCE_END", ALWAYS)
    monkeypatch.setattr(_key_values, "_VALUE_FAMILIES", tuple(
        _rule_compiler.family(kind, [c for c in plain.compiled if c.kind == kind], fast=False)
        for kind in _key_values._VALUE_KINDS
    ))
    monkeypatch.setattr(_key_values, "_MAY_STATE", ALWAYS)
    monkeypatch.setattr(_key_values, "_NOUN_WORD", ALWAYS)
    monkeypatch.setattr(_key_values, "_ASCII_MAY_STATE", ALWAYS)
    monkeypatch.setattr(_key_values, "_ASCII_NOUN_WORD", ALWAYS)
    monkeypatch.setattr(_key_values, "_KEY_VALUE_NEEDED", ALWAYS)
    monkeypatch.setattr(_key_values, "_FORMS_GATE", ALWAYS)
    monkeypatch.setattr(_key_values, "_ASCII_FORMS_GATE", ALWAYS)
    monkeypatch.setattr(_statements, "_RARE_GATE", ALWAYS)
    monkeypatch.setattr(_statements, "_ASCII_RARE_GATE", ALWAYS)
    monkeypatch.setattr(_statements, "_ASCII_FORMS", _statements._FORMS)
    monkeypatch.setattr(_statements, "_ASCII_COMMON_FORMS", _statements._COMMON_FORMS)
    monkeypatch.setattr(_statements, "_ASCII_NO_VERB", _statements._NO_VERB)
    monkeypatch.setattr(_statements, "_ASCII_COLON_FORM", _statements._COLON_FORM)
    monkeypatch.setattr(_statements, "_ASCII_COLON_FORM_INSIDE", _statements._COLON_FORM_INSIDE)
    monkeypatch.setattr(_key_values, "ASCII_KEY_VALUE_FORMS", _fact_patterns.KEY_VALUE_FORMS)


def test_the_corpus_reaches_every_gate() -> None:
    """The comparison below means something: the corpus holds facts of every kind the gates stand before."""
    kinds = {kind for facts in _extract_all(_corpus()) for per_speaker in facts for f in per_speaker for kind in f.kinds}
    assert {"constraint", "decision", "value", "ticket", "path", "identifier", "url", "assignment"} <= kinds


def test_extraction_is_the_same_with_and_without_the_gates(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _corpus()
    gated = _extract_all(texts)
    with monkeypatch.context() as patch:
        _open_gates(patch)
        ungated = _extract_all(texts)
    _extract_all([])  # leave no fact computed with the gates open in the caches
    differing = [text for text, a, b in zip(texts, gated, ungated, strict=True) if a != b]
    assert differing == []


def test_an_assistant_message_is_read_on_its_decision_lines_only() -> None:
    text = "Let me look at the file.\r\nWe decided to keep the retry loop.\u2028cat setup.py\nWe'll use pytest 8."
    assert _facts._decision_lines(text, text.lower()) == ["We decided to keep the retry loop.", "We'll use pytest 8."]
    assert _facts._decision_lines("ls -la\ncat x.py", "ls -la\ncat x.py") == []


def test_kinds_of_equal_weight_come_in_a_fixed_order() -> None:
    """Tickets, URLs, e-mails and names weigh the same: their order follows `USER_WEIGHTS`, not a set's hash."""
    fact = _facts.classify("Fix bug 43999 per ops@example.com, see https://x.io/r/1 and Ann_Lee.", "user")
    assert fact is not None
    assert fact.kinds == ("ticket", "url", "email", "identifier")


def test_the_constraint_scan_of_a_clause_finds_what_the_scan_of_every_language_finds() -> None:
    """Leaving out the rules none of whose words is in the clause changes no match."""
    texts = _corpus() + [f"{rule} {filler}" for rule in RULES for filler in ("", "x", "it, ok")]
    constraints = _ruleset.RULESET.constraints["user"]
    differing = []
    for text in texts:
        lower = text.lower()
        if len(lower) != len(text):
            continue  # the scan is only asked where lower() keeps the offsets
        scan = constraints.scan(text, lower, _fact_patterns.word_runs(lower))
        every = [m.span() for m in constraints.any_lower.finditer(lower)]
        if (scan is None and every) or (scan is not None and [m.span() for m in scan.finditer(lower)] != every):
            differing.append(text)
    assert differing == []


def test_a_clause_none_of_whose_word_runs_is_a_decision_word_matches_no_decision_rule() -> None:
    """The decision group only turns down a clause the combined decision scan finds nothing in."""
    texts = _corpus() + [f"{rule} {filler}" for rule in RULES for filler in ("", "x", "it, ok")]
    texts += [f"`{rule}`" for rule in RULES] + [f"{rule.upper()}!" for rule in RULES]
    decisions = _ruleset.RULESET.decisions["user"]
    decided = 0
    for text in texts:
        lower = text.lower()
        if len(lower) != len(text):
            continue  # the gate is only asked where lower() keeps the offsets
        if decisions.any_lower.search(lower) is not None:
            decided += 1
            assert decisions.may_match(text, lower, _fact_patterns.word_runs(lower)), text
            assert _facts.may_decide(lower), text
    assert decided > 300


# Gates rewritten to open on one character class (which the regex engine skips to), beside the form they replace.
REWRITTEN = (
    (_statements._CAPS_WORD, r"(?<![\w-])[A-Z]{4,24}(?![\w-])"),
    (_statements.SHAPES, r"[0-9/\\@_`=#$€£¥\"«“\u3040-\u30ff\u4e00-\u9fff]|[a-z][-.][a-z]"),
    (_statements.CASED_SHAPES, r"[a-z0-9][A-Z]|[A-Z]{4}"),
    (_key_values._MAY_STATE, r"\d|[`\"«“]|[A-Za-z][-_.][A-Za-z0-9]|[A-Z]{4}"),
    (_fact_patterns.ASSIGN_GATE, _fact_patterns.ASSIGN_GATE.pattern.replace("=|:|：|→|", "[=:：→]|", 1)),
)


@pytest.mark.parametrize(("rewritten", "original"), REWRITTEN)
def test_a_gate_opening_on_a_character_class_finds_what_its_original_form_finds(
    rewritten: re.Pattern[str], original: str
) -> None:
    rng = random.Random(7)
    texts = ["".join(rng.choice("AB-_.a z9é`«/=:") for _ in range(rng.randrange(1, 30))) for _ in range(5000)]
    texts += _corpus()
    form = re.compile(original)
    assert [bool(rewritten.search(t)) for t in texts] == [bool(form.search(t)) for t in texts]


def _lines() -> list[str]:
    return [line for text in _corpus() for line in text.splitlines() if line.strip()]


def test_the_ascii_sentence_split_cuts_where_the_full_split_cuts() -> None:
    rng = random.Random(11)
    texts = ["".join(rng.choice("ab .!?\t\n\x0b,") for _ in range(rng.randrange(1, 30))) for _ in range(5000)]
    texts += [text for text in _corpus() if text.isascii()]
    full = _fact_patterns.SENTENCE_SPLIT
    assert [_facts._ASCII_SENTENCE_SPLIT.split(t) for t in texts] == [full.split(t) for t in texts]


def test_units_strip_list_markers_as_the_marker_pattern_reads_them() -> None:
    """The marker pattern only runs on a sentence opening with a marker character or a digit (any script's)."""
    rng = random.Random(5)
    texts = ["".join(rng.choice("-*•>1٣ .)x\n") for _ in range(rng.randrange(1, 20))) for _ in range(5000)]
    texts += _lines()

    def every_sentence(line: str) -> list[str]:
        cut = (_fact_patterns.LIST_MARKER.sub("", s.strip()).strip() for s in _fact_patterns.SENTENCE_SPLIT.split(line))
        return [sentence for sentence in cut if sentence]

    assert [list(_facts._units(t)) for t in texts] == [every_sentence(t) for t in texts]


def test_a_clause_without_any_key_value_literal_states_no_key_value() -> None:
    """The key/value gate is exact: without one of its literals (or a value noun) no form matches, links included."""
    texts = _lines() + [f"{v} see https://x.io/{i}" for i, v in enumerate(VALUES)] + ["http://a.b/c: 42", "x -> 5 ms"]
    skipped = 0
    for text in texts:
        lower = text.lower()
        if _key_values._KEY_VALUE_NEEDED.search(lower) is None and _statements.VALUE_NOUNS.isdisjoint(_statements.words_of(lower)):
            skipped += 1
            assert _key_values.key_value_of.__wrapped__(text) is None, text
    assert skipped > 100


def test_a_literal_gate_written_as_a_trie_finds_what_the_plain_alternation_finds() -> None:
    rng = random.Random(3)
    sets = [
        ("a", "ab", "abc", "b", "bca", "a.m", "a b"), ("x",), ("", "y"), (), _ruleset.RULESET.decision_needles or (),
        *_fact_patterns.KEY_VALUE_LITERALS, tuple(_statements.FORM_LITERALS),
    ]
    texts = ["".join(rng.choice("abc. xyм") for _ in range(rng.randrange(0, 12))) for _ in range(3000)]
    texts += [text.lower() for text in _corpus()]
    for parts in sets:
        plain = re.compile("|".join(re.escape(part) for part in parts) or "(?!)")
        trie = literals(parts)
        assert [bool(trie.search(t)) for t in texts] == [bool(plain.search(t)) for t in texts], parts


def test_the_prefilter_gives_the_words_of_the_whole_text_or_none() -> None:
    """The words the prefilter read are reused by the patterns: they are exactly `words_of` the whole text."""
    texts = _lines() + ["nick: don't push", "a_b, never", "İx: must", "nick: x.py"]
    read = [(text, _statements.read_prefilter(text, text.lower())) for text in texts]
    given = [(text, words) for text, (_, words) in read if isinstance(words, frozenset)]
    assert len(given) > 100
    assert [words for _, words in given] == [_statements.words_of(text.lower()) for text, _ in given]
    assert [holds for _, (holds, _) in read] == [_statements.may_hold_fact(text, text.lower()) for text in texts]


def test_a_word_of_letters_alone_holds_a_value_only_in_camel_case_and_is_no_exact_token() -> None:
    rng = random.Random(9)
    words = ["".join(rng.choice("aBcZéÉжЖ") for _ in range(rng.randrange(1, 9))) for _ in range(3000)]
    words += [word for line in _lines() for word in line.split() if word.isalpha()]
    words += ["McDonald", "XMLHttp", "ABCD", "No", "ǅx", "Ⅻ"]
    every = tuple(c.pattern for c in _ruleset.RULESET.compiled if c.kind in _key_values._VALUE_KINDS)
    assert [_key_values.has_value(w) for w in words] == [any(m.end() > m.start() for p in every for m in p.finditer(w)) for w in words]
    assert all(_statements.EXACT_TOKEN.fullmatch(w) is None for w in words)


def test_normalise_is_the_whitespace_sub_then_the_strip() -> None:
    rng = random.Random(11)
    texts = ["".join(rng.choice("aB .,;:!?\t\n\u00a0\u2003\u3000\x1c。É") for _ in range(rng.randrange(0, 14))) for _ in range(3000)]
    texts += _lines()
    expected = [re.sub(r"\s+", " ", text.casefold()).strip(" .,;:!?。！？") for text in texts]
    assert [_facts.normalise(text) for text in texts] == expected


def test_an_ascii_constraint_subject_is_the_one_read_with_the_case_blind_scan() -> None:
    """The ASCII path (the plain scan over lower()) gives the subject the case-blind scan over the text gives."""
    rng = random.Random(12)
    words = ["Never", "ALWAYS", "don't", "DONT", "Do Not", "mustn't", "should not", "NE", "n'", "no", "Keine", "use", "Tabs"]
    clauses = [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 7))) for _ in range(2000)]
    clauses += [line for line in _lines() if line.isascii()]

    def case_blind(clause: str) -> tuple[str, ...]:
        body = _fact_patterns.LIST_MARKER.sub("", clause.strip())
        stripped = _fact_patterns.CONSTRAINT_WORDS.sub(" ", body)
        found = [w for w in _facts.normalise(_fact_patterns.PUNCT_STRIP.sub(" ", stripped)).split()
                 if w not in _fact_patterns.SUBJECT_STOPWORDS]
        return ("c:" + " ".join(found[:_facts.SUBJECT_MAX_WORDS]),) if found else ()

    assert [_facts._subjects(c, {"constraint"}, None) for c in clauses] == [case_blind(c) for c in clauses]


def test_a_clause_holds_an_exact_token_exactly_when_the_token_scan_finds_one() -> None:
    """The ASCII-digit short cut of `_holds_token` accepts only what `EXACT_TOKEN` finds."""
    rng = random.Random(13)
    texts = ["".join(rng.choice("a7٣-._+/:@#` \"«x") for _ in range(rng.randrange(0, 10))) for _ in range(5000)]
    texts += _lines()
    assert [_statements._holds_token(t) for t in texts] == [_statements.EXACT_TOKEN.search(t) is not None for t in texts]


def test_the_colon_form_is_read_as_its_full_scan_reads_it() -> None:
    """`_colon_form_matches` gives the matches of the "X = Y" / "X: Y" form's own scan, groups and all."""
    rng = random.Random(14)
    texts = ["".join(rng.choice("ab (,;:=→-> \t/") for _ in range(rng.randrange(0, 14))) for _ in range(5000)]
    texts += _lines() + ["", ":", "a: b", "(x = 1", "x: y, z: 2", " a: b", "a: http://x", "the key: 7"]

    def read(matches: Iterator[re.Match[str]]) -> list[tuple[tuple[int, int], dict[str, str | Any]]]:
        return [(m.span(), m.groupdict()) for m in matches]

    colon = _statements._COLON_FORM
    assert [read(_statements._colon_form_matches(t)) for t in texts] == [read(colon.finditer(t)) for t in texts]
    assert sum(1 for t in texts if colon.search(t)) > 1000


def _shaped_texts(seed: int, alphabet: str, words: tuple[str, ...]) -> list[str]:
    rng = random.Random(seed)
    pieces = [*alphabet, *words]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 16))) for _ in range(6000)]
    return texts + _lines()


def test_a_rule_run_in_its_faster_form_finds_the_same_matches() -> None:
    """A rule opening on a look-behind and digits runs opening on the digit: the same spans and groups."""
    texts = _shaped_texts(22, "12 .,x_-٣", ("5", "ms", "MB", "sec", "30s", "a1", "1.5", "2,5", "kg", "%", "°C", "v2"))
    rewritten = [(c.pattern, _rule_compiler._opened(c.pattern)) for c in _ruleset.RULESET.compiled]
    rewritten = [(original, faster) for original, faster in rewritten if faster is not original]
    assert rewritten
    for original, faster in rewritten:
        found = [[(m.span(), m.groups()) for m in original.finditer(t)] for t in texts]
        assert [[(m.span(), m.groups()) for m in faster.finditer(t)] for t in texts] == found
        assert sum(1 for spans in found if spans) > 500


def test_every_rule_behind_its_gate_finds_what_it_finds_alone() -> None:
    """Each rule's gate (and its family's) only turns down a text the rule finds nothing in, ASCII or not."""
    texts = _lines() + [v for v in VALUES] + [v.upper() for v in VALUES] + list(RULES)
    for family in _ruleset.RULESET.families:
        compiled = [c for c in _ruleset.RULESET.compiled if c.kind == family.kind]
        for text in texts:
            lower = text.lower()
            expected = [(m.start(), m.end()) for c in compiled for m in c.pattern.finditer(text) if m.end() > m.start()]
            if expected:
                assert family.may_match(text, lower, text.isascii()), (family.kind, text)
            forms = family.ascii_rules if text.isascii() else family.rules
            assert sorted(_fact_gates.gated_spans(text, forms, lower)) == sorted(expected), (family.kind, text)


def test_an_equals_sign_or_a_colon_opens_the_key_value_gates_as_their_scans_do() -> None:
    """The substring tests in front of the key/value gates only pass a clause the gates' own scans pass."""
    rng = random.Random(23)
    texts = ["".join(rng.choice("a=:/ x：") for _ in range(rng.randrange(0, 8))) for _ in range(3000)]
    texts += [line.lower() for line in _lines()]
    opened = [t for t in texts if "=" in t or _key_values._COLON_OPENS.search(t)]
    assert len(opened) > 1000
    assert [t for t in opened if _key_values._KEY_VALUE_NEEDED.search(t) is None] == []
    assert [t for t in texts if ("=" in t or ":" in t) and _fact_patterns.ASSIGN_GATE.search(t) is None] == []


def test_the_key_value_tries_answer_as_the_gates_they_stand_for() -> None:
    """Past the colon test `_KEY_VALUE_NEEDED` is its trie alone, `ASSIGN_GATE` the trie of its literals, and over
    ASCII text the ASCII literals' tries answer as the full ones."""
    rng = random.Random(29)
    pieces = (" is ", " set ", "chang", "=", ":", "://", " es ", "значение", "是", "agreed", "auf ", "x", " ", "move ")
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 5))) for _ in range(3000)]
    texts += [line.lower() for line in _lines()]
    for text in texts:
        needed = _key_values._KEY_VALUE_NEEDED.search(text) is not None
        assert needed == (_key_values._COLON_OPENS.search(text) is not None or _key_values._FORMS_GATE.search(text) is not None)
        assign = _fact_patterns.ASSIGN_GATE.search(text) is not None
        assert assign == (_key_values._ASSIGN_TRIE.search(text) is not None)
        if text.isascii():
            assert (_key_values._FORMS_GATE.search(text) is None) == (_key_values._ASCII_FORMS_GATE.search(text) is None)
            assert assign == (_key_values._ASCII_ASSIGN_GATE.search(text) is not None)
