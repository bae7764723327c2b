"""Carry-forward through successive compressions, group speakers, plain statements of values, the drop policy."""
from __future__ import annotations

import pytest

from agent.context import ContextCompressor, SummaryRequest
from agent.context._facts import extract_facts
from agent.context.engine import CompressionEvent
from agent.context.ledger import FactLedger, read_span
from agent.context.user_words import handoff_sections
from agent.messages import Message, assistant, system, user
from agent.settings import CompressionSettings
from agent.tokens import default_counter
from gateway.admin.events import EventLog
from gateway.admin.tap import Recorder
from gateway.ops.metrics import Metrics

COUNTER = default_counter()
SPEAKERS = ("ann", "bob", "cy", "dee")


class NothingUseful:
    """A summary model whose summaries keep none of the facts."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        return "## Goal\nPeople chatted.\n\n## Critical context\nNone."


# One fact per round, each in another wording; a round's chatter pushes it out of the tail.
ROUNDS = (
    ("ann", "note for everyone: the value of the staging password is LX8NKL3"),
    ("bob", "the door code is KZ-3388-A"),
    ("cy", "release tag = QK-8972-F"),
    ("dee", "we agreed on quika-vexro-93 for the meeting room"),
    ("ann", "Never deploy the billing service on Fridays."),
)


def _chatter(round_number: int) -> list[Message]:
    lines = [
        f"{SPEAKERS[i % 4]}: round {round_number} chat line {i} about lunch plans, the weather, the match last night "
        "and whether anyone has seen the blue umbrella that was left in the kitchen"
        for i in range(40)
    ]
    return [user(line) for line in lines]


def _attributed(handoff: str, speaker: str, fact: str) -> bool:
    """The fact with its speaker: a ledger line, or a user-words entry."""
    return f"user:{speaker}] {fact}" in handoff or f"user:{speaker}]\n> {fact}" in handoff


@pytest.mark.parametrize("with_words", [True, False], ids=["ledger+words", "ledger"])
async def test_five_compressions_with_a_useless_summary_keep_every_fact_verbatim(with_words: bool) -> None:
    """Each fact is said once, then compressed away 5 times in a row: all stay verbatim, with their speaker."""
    settings = CompressionSettings(protect_first_n=1, protect_last_n=4, target_ratio=0.05)
    summarizer = NothingUseful()
    sections = handoff_sections(settings) if with_words else (FactLedger(protect_first_n=1),)
    compressor = ContextCompressor(
        settings, context_length=8000, counter=COUNTER, summarizer=summarizer, sections=sections
    )
    history: list[Message] = [system("You are in a group chat."), user("ann: hi all")]
    answer_round = 2
    for number, (speaker, fact) in enumerate(ROUNDS):
        history.append(user(f"{speaker}: {fact}"))
        if number == answer_round:
            history += [user("bob: what's the backup key again?"), user("dee: ZX-5521-K")]
        history += [*_chatter(number), user("cy: @bot noted?"), assistant("noted.")]
        result = await compressor.compress(history, trigger="hygiene")
        assert result.outcome == "compressed", result.reason
        history = list(result.messages)
    assert summarizer.calls == 5
    handoff = next(m.text for m in history if m.compressed_summary)
    for speaker, fact in ROUNDS:
        assert _attributed(handoff, speaker, fact), fact
    assert "ZX-5521-K (answer to bob: what's the backup key again?)" in handoff
    assert ("## User words kept" in handoff) == with_words
    assert "chat line 3 about lunch" not in handoff  # the chatter itself is gone


async def test_a_newer_statement_replaces_the_older_across_compressions() -> None:
    settings = CompressionSettings(protect_first_n=1, protect_last_n=2, target_ratio=0.05)
    compressor = ContextCompressor(
        settings, context_length=8000, counter=COUNTER, summarizer=NothingUseful(),
        sections=(FactLedger(protect_first_n=1),),
    )
    bot = [user("cy: @bot noted?"), assistant("noted.")]
    history: list[Message] = [system("s"), user("ann: hi"), user("ann: the door code is 1111-A"), *_chatter(0), *bot]
    history = list((await compressor.compress(history, trigger="hygiene")).messages)
    history += [user("bob: the door code is 2222-B"), *_chatter(1), *bot]
    result = await compressor.compress(history, trigger="hygiene")
    handoff = next(m.text for m in result.messages if m.compressed_summary)
    assert "user:bob] the door code is 2222-B" in handoff
    assert result.fact_drops.superseded == ("- [turn 2, user:ann] the door code is 1111-A",)
    assert "1111-A" not in "\n".join(m.text for m in result.messages)


@pytest.mark.parametrize(
    "text",
    [
        "note for everyone: the value of the staging password is LX8NKL3",
        "the door code is KZ-3388-A",
        "release tag = QK-8972-F",
        "rollout token: 389DHG9",
        "ok, set the vpn pin to 4471 please",
        "we agreed on quika-vexro-93 for the meeting room",
        "FYI the new backup key is now zuka_mite_381, don't lose it",
        "der Wert für api quota ist 49284",
        "wir haben uns auf ZK-77 für den Server geeinigt",
        "la valeur de canary slot est v2.3.4",
        "acordamos ZZ-1234-A para el invoice ref",
        "значение build number — 44812",
        "门禁密码的值是ropa-mino-12",
    ],
)
def test_plain_statements_of_an_exact_value_are_facts(text: str) -> None:
    facts = extract_facts(text, "user")
    assert [f.text for f in facts] == [text]
    assert "assignment" in facts[0].kinds and any(k.startswith("k:") for k in facts[0].subjects)


@pytest.mark.parametrize(
    "text",
    ["what's the door code again?", "lunch at the usual place", "w32codecs: win32 binary codecs for the player",
     "The file is UTF-8 encoded."],
)
def test_questions_chatter_and_descriptions_are_not_statements(text: str) -> None:
    assert not any("assignment" in f.kinds for f in extract_facts(text, "user"))


def test_speakers_come_from_the_name_the_bracket_or_a_shared_prefix() -> None:
    irc = [user("[Jack|away] the door code is 4471", name="Jack_away"), user("[ann] ok")]
    assert [(m.name, m.text) for m in read_span(irc, None, protect_first_n=0).items] == [  # type: ignore[union-attr]
        ("Jack|away", "the door code is 4471"), ("ann", "ok")
    ]
    shared = [user("ann: timeout: 30s"), user("bob: fine"), user("ann: ok"), user("bob: so 45s?")]
    assert [m.name for m in read_span(shared, None, protect_first_n=0).items] == ["ann", "bob", "ann", "bob"]  # type: ignore[union-attr]
    alone = [user("timeout: 30s"), user("and retries: 3")]
    assert [(m.name, m.text) for m in read_span(alone, None, protect_first_n=0).items] == [  # type: ignore[union-attr]
        (None, "timeout: 30s"), (None, "and retries: 3")
    ]


def test_when_the_budget_binds_minor_lines_go_first_unreferenced_then_oldest() -> None:
    """Mentions before statements of a value; among mentions the unreferenced oldest first; all reported.

    One person's chat: in a group, mentions have a smaller share of their own (tests/agent/context/test_ledger_group.py).
    """
    mentions = [user(f"I saw /var/log/app-{i}.log fill up again") for i in range(8)]
    statements = [user(f"the shard key for region {i} is SK-{i}00-X") for i in range(4)]
    later = [user("/var/log/app-0.log is the one to watch")]
    dropped = [*mentions, *statements, *later, assistant("ok " * 3000)]
    full = FactLedger().compute(dropped, None, COUNTER)
    assert not full.over_budget
    tight = FactLedger(max_tokens=full.tokens - 70).compute(dropped, None, COUNTER)
    gone = [e.fact.text for e in tight.over_budget]
    assert gone and all("/var/log/app-" in text for text in gone)
    assert all("SK-" in e.fact.text for e in tight.kept if "shard key" in e.fact.text)
    assert sum("shard key" in e.fact.text for e in tight.kept) == 4
    # app-0 is referenced by a later line: it outlives the unreferenced ones, which go oldest first.
    assert "I saw /var/log/app-0.log fill up again" not in gone
    assert gone == [f"I saw /var/log/app-{i}.log fill up again" for i in range(1, len(gone) + 1)]


async def test_drops_reach_the_event_the_result_and_the_metric() -> None:
    settings = CompressionSettings(protect_first_n=1, protect_last_n=2, target_ratio=0.05, fact_ledger_max_tokens=120)
    compressor = ContextCompressor(
        settings, context_length=8000, counter=COUNTER, summarizer=NothingUseful(),
        sections=(FactLedger(max_tokens=120, protect_first_n=1),),
    )
    history = [
        system("s"), user("ann: hi"), *(user(f"ann: the key for box {i} is BX-{i}1-Q") for i in range(12)), *_chatter(0),
        user("cy: @bot noted?"), assistant("noted."),
    ]
    events: list[CompressionEvent] = []

    async def sink(event: CompressionEvent) -> None:
        events.append(event)

    result = await compressor.compress(history, trigger="hygiene", on_event=sink)
    assert result.outcome == "compressed" and result.facts_dropped > 0
    assert result.explain is not None and result.explain.fact_drops == result.fact_drops
    finished = [e for e in events if e.kind == "finished"]
    assert [e.facts_dropped for e in finished] == [result.facts_dropped]
    metrics = Metrics()
    Recorder(EventLog(), metrics)("s1", len(history), result)
    sample = metrics.registry.get_sample_value("chorus_facts_dropped_total", {"reason": "over_budget"})
    assert sample == len(result.fact_drops.over_budget) > 0
