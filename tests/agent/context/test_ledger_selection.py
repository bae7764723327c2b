"""The budget selection offers entries as their rank orders them, though most are never ranked (`_select`).

`_select` looks up whether an entry's values are referenced later only for the weights at which the selection
keeps something: where it turns every entry of a weight down, the order within that weight cannot matter. These
tests compare it with the plain loop (every entry ranked, offered in rank order) on random entries, spans and
budgets, chosen so that references decide what is kept.
"""
from __future__ import annotations

import random

from agent.context._facts import Fact
from agent.context.fact_rules import FactKind
from agent.context.ledger import LedgerEntry, Span, SpanMessage, _Ranking, _select, _Selection
from agent.tokens import TokenCounter

WORDS = ("port", "8080", "app-0", "app-1", "/srv/x.yaml", "QX-7", "the", "code", "is", "4471", "deploy", "main")
KINDS: tuple[tuple[FactKind, ...], ...] = (("assignment",), ("value",), ("path",), ("identifier",), ("constraint",), ("decision",), ("ticket",))
WEIGHTS: dict[FactKind, int] = {"assignment": 95, "constraint": 90, "decision": 85, "value": 75, "ticket": 70, "path": 65, "identifier": 55}
COUNTER = TokenCounter(lambda text: len(text.split()), name="words")


def _case(rng: random.Random) -> tuple[list[LedgerEntry], Span, int, int]:
    entries: list[LedgerEntry] = []
    items: list[SpanMessage] = []
    for order in range(rng.randrange(1, 40)):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 7)))
        kinds = rng.choice(KINDS)
        needles = tuple(sorted({w for w in text.split() if any(c.isdigit() or c in "/-" for c in w)}))
        fact = Fact(text, kinds, (), needles, WEIGHTS[kinds[0]])
        entries.append(LedgerEntry(order + 1, "user", None, fact, order))
        items.append(SpanMessage(order + 1, "user", None, text))
    span = Span(tuple(items), len(items))
    return entries, span, rng.randrange(-2, 60), rng.randrange(0, 30)


def _plain(entries: list[LedgerEntry], rank: _Ranking, selection: _Selection, budget: int) -> dict[int, LedgerEntry]:
    over: dict[int, LedgerEntry] = {}
    for entry in sorted(entries, key=rank.key, reverse=True):
        if budget <= 0 or selection.offer(entry) == "over_budget":
            over[entry.order] = entry
    return over


def test_the_selection_keeps_and_drops_what_offering_every_entry_in_rank_order_does() -> None:
    rng = random.Random(7)
    shortcut = ordered = 0
    for _ in range(3000):
        entries, span, budget, minor = _case(rng)
        results = []
        for select in (_select, _plain):
            selection = _Selection(budget=budget, counter=COUNTER, minor_budget=minor)
            rank = _Ranking(entries, span, budget)
            over = select(entries, rank, selection, budget)
            results.append((sorted(over), sorted(selection.accepted), selection.used, selection.minor_used))
            if select is _select:
                looked = len(rank._referenced)
        assert results[0] == results[1]
        shortcut += rank.binds and looked < len(entries)
        ordered += rank.binds and looked > 0
    # The comparison means something: weights were skipped unranked, and others were ranked.
    assert shortcut > 100 and ordered > 100


def test_a_verdict_changes_nothing_the_offer_reads_and_counts_no_tokens() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text.split())

    counter = TokenCounter(count, name="words")
    selection = _Selection(budget=8, counter=counter, minor_budget=3)
    kept = LedgerEntry(1, "user", None, Fact("the port is 8080", ("assignment",), (), ("8080",), 95), 0)
    assert selection.verdict(kept) == "unknown" and selection.accepted == {} and selection.used == 0
    assert counted == []  # the offer counts it, in rank order
    assert selection.offer(kept) == "kept"
    mention = LedgerEntry(2, "user", None, Fact("app-0 app-1 main deploy", ("identifier",), (), ("app-0",), 55), 1)
    assert selection.verdict(mention) == "over_budget" == selection.offer(mention)
    assert list(selection.accepted) == [0] and selection.used == 8  # "- [turn 1, user] the port is 8080\n"
