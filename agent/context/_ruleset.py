"""The fact rules of `agent.context.fact_rules` compiled once: the tables fact extraction reads.

Owns `Ruleset` (the families of the value-like kinds in the order they run, the constraint and decision groups
for each speaker, the literals an assistant line must hold to decide anything, the ranks of the kinds) and
`RULESET`, built at import by `compile_ruleset`. `compile_ruleset(fast=False)` is the plain form: no gate, the
patterns as written; tests compare the two (tests/agent/context/test_fact_gates.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from agent.context._ascii import ascii_twin
from agent.context._literals import literals
from agent.context._rule_compiler import (
    CompiledRule,
    Family,
    RuleGroup,
    compile_rule,
    family,
    group,
    needles,
    scoped,
)
from agent.context.fact_rules import FORM_RANKS, RULES, FactKind, FactRule, Speaker

# The kinds read as one scan over the lower-cased clause, before the families.
GROUP_KINDS: frozenset[FactKind] = frozenset({"constraint", "decision"})


def kind_ranks(rules: tuple[FactRule, ...]) -> dict[FactKind, int]:
    """The rank of every kind: the form kinds first, then each rule's kind in order of appearance (kinds of equal
    rank sort in this order); a kind ranked twice differently is an error."""
    ranks: dict[FactKind, int] = dict(FORM_RANKS)
    for rule in rules:
        if ranks.setdefault(rule.kind, rule.rank) != rule.rank:
            raise ValueError(f"the {rule.kind} rules disagree on its rank ({ranks[rule.kind]} and {rule.rank})")
    return ranks


@dataclass(frozen=True, slots=True)
class Ruleset:
    """What extraction reads, derived from the rules (see the module docstring)."""

    compiled: tuple[CompiledRule, ...]
    families: tuple[Family, ...]  # the user's, the masking kinds first
    constraints: dict[Speaker, RuleGroup]
    decisions: dict[Speaker, RuleGroup]
    decision_patterns: tuple[re.Pattern[str], ...]  # every speaker's, as written (on a text lower() changes)
    any_decision: re.Pattern[str]  # every decision pattern, one scan over the lower-cased text
    ascii_any_decision: re.Pattern[str]
    decision_needles: tuple[str, ...] | None  # one of these in a lower-cased text that decides; None: no such set
    ascii_decision_needles: tuple[str, ...] | None
    decision_gate: re.Pattern[str] | None  # the needles as one alternation
    ranks: dict[FactKind, int]


def compile_ruleset(rules: tuple[FactRule, ...] = RULES, *, fast: bool = True) -> Ruleset:
    compiled = tuple(compile_rule(rule) for rule in rules)
    for item in compiled:
        if "assistant" in item.rule.scope and item.kind != "decision":
            raise ValueError(f"an assistant message is only read for decisions, not for a {item.kind} rule")
    kinds = list(dict.fromkeys(c.kind for c in compiled if c.kind not in GROUP_KINDS))
    by_kind = {kind: [c for c in scoped(compiled, "user") if c.kind == kind] for kind in kinds}
    families = [family(kind, rules_, fast=fast) for kind, rules_ in by_kind.items() if rules_]
    families.sort(key=lambda f: not f.masks)  # stable: the masking kinds first, each group in rule order
    speakers: tuple[Speaker, ...] = ("user", "assistant")
    constraints = {s: group([c for c in scoped(compiled, s) if c.kind == "constraint"], fast=fast) for s in speakers}
    decisions = {s: group([c for c in scoped(compiled, s) if c.kind == "decision"], fast=fast) for s in speakers}
    every_decision = [c for c in compiled if c.kind == "decision"]
    any_decision = group(every_decision, fast=fast).any_lower
    found = needles(every_decision) if fast else None
    return Ruleset(
        compiled=compiled,
        families=tuple(families),
        constraints=constraints,
        decisions=decisions,
        decision_patterns=tuple(c.pattern for c in every_decision),
        any_decision=any_decision,
        ascii_any_decision=ascii_twin(any_decision),
        decision_needles=found,
        ascii_decision_needles=tuple(n for n in found if n.isascii()) if found is not None else None,
        decision_gate=literals(found) if found is not None else None,
        ranks=kind_ranks(rules),
    )


RULESET = compile_ruleset()
