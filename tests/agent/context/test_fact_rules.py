"""The fact rules are records the compiler turns into gated extraction: a rule added as a record is found as written."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.context import _facts, _key_values, _ruleset
from agent.context._facts import extract_facts
from agent.context._rule_compiler import family
from agent.context.fact_rules import RULES, FactRule


def test_a_date_and_a_time_written_the_cjk_way_are_values() -> None:
    facts = extract_facts("会议改到2026年12月6日下午3点", "user")
    assert [fact.kinds for fact in facts] == [("value",)]
    assert {"2026年12月6日", "下午3点"} <= set(facts[0].needles)
    assert "3点半" in extract_facts("明天3点半见", "user")[0].needles
    assert "15时30分" in extract_facts("15时30分开始", "user")[0].needles


@pytest.fixture
def with_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The rules with one more record, compiled as at import; every extraction cache forgotten before and after."""
    rule = FactRule("ticket", r"\bRFC ?\d{3,4}\b", 70, note="an RFC: RFC 6455")
    ruleset = _ruleset.compile_ruleset((*RULES, rule))
    monkeypatch.setattr(_facts, "RULESET", ruleset)
    monkeypatch.setattr(_key_values, "_VALUE_FAMILIES", tuple(
        family(kind, [c for c in ruleset.compiled if c.kind == kind]) for kind in _key_values._VALUE_KINDS
    ))
    _facts.extract_facts.cache_clear()
    _facts.classify.cache_clear()
    yield
    _facts.extract_facts.cache_clear()
    _facts.classify.cache_clear()


def test_a_rule_added_as_one_record_is_found_behind_the_gates_the_compiler_derives(with_rule: None) -> None:
    found = extract_facts("see RFC 6455 for the framing", "user")
    assert [fact.kinds for fact in found] == [("ticket",)]
    assert "RFC 6455" in found[0].needles
    assert extract_facts("see RFC 6455 for the framing", "assistant") == ()  # its scope is the user's messages
    ascii_forms = next(f for f in _facts.RULESET.families if f.kind == "ticket").ascii_rules
    assert len(ascii_forms) == 4  # gated and twinned like the three written before it


def test_rules_of_one_kind_share_its_rank() -> None:
    with pytest.raises(ValueError, match="rank"):
        _ruleset.compile_ruleset((*RULES, FactRule("ticket", r"\bRFC\d+", 71)))


def test_an_assistant_message_is_only_read_for_decisions() -> None:
    with pytest.raises(ValueError, match="decisions"):
        _ruleset.compile_ruleset((*RULES, FactRule("value", r"\d+ apples", 75, frozenset({"user", "assistant"}))))
