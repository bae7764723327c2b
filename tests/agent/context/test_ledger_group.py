"""Group chats: values stated by position (letters-only codes), over-capture guards on real IRC traffic,
what the user-words section keeps in a group, and the group budget policy."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.context import ContextCompressor, SummaryRequest
from agent.context._facts import extract_facts
from agent.context.ledger import GROUP_MINOR_SHARE, FactLedger
from agent.context.user_words import UserWords, handoff_sections
from agent.messages import Message, assistant, system, user
from agent.settings import CompressionSettings
from agent.tokens import TokenCounter, default_counter

COUNTER = default_counter()
IRC = Path(__file__).resolve().parents[2] / "data" / "irc_ubuntu_meeting_2.jsonl"


def _irc_lines() -> list[str]:
    record = json.loads(IRC.read_text(encoding="utf-8").splitlines()[0])
    return [str(m["content"]) for m in record["messages"]]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the code is YTHFKSA", "YTHFKSA"),
        ("la valeur de vpn pin est YTHFKSA", "YTHFKSA"),
        ("the wifi password is swordfish", "swordfish"),
        ("the door code is banana", "banana"),
        ("Der Code lautet QWERTZ", "QWERTZ"),
        ("код доступа 7731", "7731"),
        ("the shard key for region 2 is SK-200-X", "SK-200-X"),
        ("fyi the staging db password is Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("deploy freeze starts 2024-12-20", "2024-12-20"),
    ],
)
def test_a_value_is_exact_by_its_position_in_a_statement(text: str, value: str) -> None:
    facts = extract_facts(text, "user")
    assert [f.text for f in facts] == [text]
    assert facts[0].kinds[0] == "assignment" and value in facts[0].needles


@pytest.mark.parametrize(
    "text",
    [
        "the code is simple", "the key is consistency", "the problem is mine", "the fix is simple", "login fails",
        "the word is out", "yep, don't know anything about that", "never used it", "I think the issue is NAT here",
        "the password is wrong", "the wifi password is too short",
    ],
)
def test_ordinary_words_after_is_are_no_values(text: str) -> None:
    assert not any(f.kinds[0] in ("assignment", "constraint") for f in extract_facts(text, "user"))


def test_a_letters_only_code_given_as_an_answer_keeps_its_question() -> None:
    lines = [user("ann: what's the vpn pin again?"), user("bob: YTHFKSA"),
             user("cy: anyone have the wifi password?"), user("dee: swordfish"),
             user("ann: people do that?"), user("bob: windows 2003"), assistant("ok " * 500)]
    kept = [e.line for e in FactLedger().compute(lines, None, COUNTER).kept]
    assert "- [turn 2, user:bob] YTHFKSA (answer to ann: what's the vpn pin again?)" in kept
    assert "- [turn 4, user:dee] swordfish (answer to cy: anyone have the wifi password?)" in kept
    assert not any("windows 2003" in line for line in kept)  # that question asks for no value


def test_real_irc_traffic_yields_few_ledger_entries_and_no_false_statements_of_a_value() -> None:
    """A thousand lines of a real IRC meeting: a handful of candidates, almost no "X is Y" or answers."""
    lines = _irc_lines()
    build = FactLedger(max_tokens=100_000).compute([user(t) for t in lines] + [assistant("ok")], None, COUNTER)
    candidates = [*build.kept, *build.duplicates, *build.superseded]
    exact = [e for e in candidates if e.fact.kinds[0] in ("assignment", "answer")]
    assert len(candidates) <= len(lines) * 0.12
    assert len(exact) <= 3, [e.line for e in exact]


def test_in_a_group_user_words_keep_value_statements_not_chit_chat_and_the_newest_per_subject() -> None:
    chat = [user(f"{who}: {text}") for who, text in [
        ("ann", "lunch at the usual place?"), ("bob", "the door code is KZ-3388-A"), ("cy", "lol same"),
        ("dee", "I'm getting a lot of these: the LUN appears to be stuck writing LBA=2940h, retry in 70ms, "
                "and the kernel log is full of them since the upgrade last night, any idea?"),
        ("ann", "Change merged: jenkins-bot"), ("bob", "ok"), ("cy", "Change merged: other-bot"),
    ]]
    shown = [m.text for m in UserWords().compute([*chat, assistant("ok " * 500)], None, COUNTER).kept]
    assert shown == ["the door code is KZ-3388-A", "Change merged: other-bot"]
    alone = [user("lunch at the usual place?"), user("the door code is KZ-3388-A"), assistant("ok")]
    assert len(UserWords().compute(alone, None, COUNTER).kept) == 2  # one person's chat keeps every message


def test_in_a_group_mentions_and_rules_get_a_share_of_the_budget_statements_of_a_value_all_of_it() -> None:
    """The budget binds in a group: every statement of a value stays, mentions go first and are reported."""
    lines: list[Message] = []
    for i in range(60):
        lines.append(user(f"{'ann' if i % 2 else 'bob'}: I saw /var/log/app-{i}.log fill up again on host-{i}"))
        if i % 6 == 0:
            lines.append(user(f"cy: the shard key for region {i} is SK-{i}00-X"))
    build = FactLedger().compute([*lines, assistant("ok " * 5000)], None, COUNTER)
    kept = [e.fact.text for e in build.kept]
    assert [t for t in kept if "shard key" in t] == [f"the shard key for region {i} is SK-{i}00-X" for i in range(0, 60, 6)]
    mentions = [e for e in build.kept if "/var/log" in e.fact.text]
    minor_tokens = sum(COUNTER.count_text(e.line + "\n") for e in mentions)
    assert minor_tokens <= FactLedger().max_tokens * GROUP_MINOR_SHARE
    assert build.over_budget and all("/var/log" in e.fact.text for e in build.over_budget)


def test_in_a_group_rules_worded_as_rules_and_decisions_outlive_advice_and_mentions() -> None:
    lines: list[Message] = [user("ann: Never deploy the billing service on Fridays."),
                            user("bob: we decided to use PostgreSQL 15.2 for the analytics store")]
    for i in range(60):
        lines.append(user(f"{'cy' if i % 2 else 'dee'}: you should check /var/log/app-{i}.log on host-{i} first"))
    build = FactLedger().compute([*lines, assistant("ok " * 5000)], None, COUNTER)
    kept = [e.fact.text for e in build.kept]
    assert "Never deploy the billing service on Fridays." in kept
    assert "we decided to use PostgreSQL 15.2 for the analytics store" in kept
    assert sum("you should" in t for t in kept) < 10 and build.over_budget


class NothingUseful:
    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        return "## Goal\nPeople chatted.\n\n## Critical context\nNone."


async def test_five_compressions_of_real_irc_traffic_keep_codes_of_letters_and_plain_passwords() -> None:
    """Facts said once among real IRC lines, each compressed away 5 times in a row with a useless summary."""
    settings = CompressionSettings(protect_first_n=1, protect_last_n=4, target_ratio=0.05)
    compressor = ContextCompressor(settings, context_length=8000, counter=COUNTER, summarizer=NothingUseful(),
                                   sections=handoff_sections(settings))
    facts = [("ann", "the vpn code is YTHFKSA"), ("bob", "the wifi password is swordfish"),
             ("cy", "la valeur de canary slot est v2.3.4"), ("dee", "backup key = 5ZE8NNR"),
             ("ann", "we agreed on quika-vexro-93 for the meeting room")]
    irc = [line.split("] ", 1)[-1] for line in _irc_lines()]
    history: list[Message] = [system("You are in a group chat."), user("ann: hi all")]
    for number, (speaker, fact) in enumerate(facts):
        history.append(user(f"{speaker}: {fact}"))
        history += [user(f"{('ogra', 'JaneW', 'cbx33')[i % 3]}: {t}") for i, t in enumerate(irc[number * 60:][:60])]
        history += [user("cy: @bot noted?"), assistant("noted.")]
        result = await compressor.compress(history, trigger="hygiene")
        assert result.outcome == "compressed", result.reason
        history = list(result.messages)
    handoff = next(m.text for m in history if m.compressed_summary)
    for speaker, fact in facts:
        assert f"user:{speaker}] {fact}" in handoff or f"user:{speaker}]\n> {fact}" in handoff, fact


def test_a_mention_the_group_share_cannot_hold_is_turned_down_without_counting_its_tokens() -> None:
    """Tokens >= chars / 10: once short mentions fill the mentions' share, a long one needs no tokenisation."""
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return COUNTER.count_text(text)

    paste = " ".join(f"rot{j}" for j in range(30))  # a whole sentence under `MAX_FACT_CHARS`: ~200 chars
    long = [user(f"{'ann' if i % 2 else 'bob'}: /var/log/app-{i}.log filled up on host-{i} {paste}") for i in range(20)]
    short = [user(f"cy: /var/log/x-{i}.log full") for i in range(20)]  # newer: offered first
    build = FactLedger().compute([*long, *short, assistant("ok " * 5000)], None, TokenCounter(count, name="counting"))
    turned_down = [e.line for e in build.over_budget if "/var/log/app-" in e.line]
    assert len(turned_down) == 20
    assert [line for line in turned_down if any(line in text for text in counted)] == []
    assert build.kept and all(any(e.line in text for text in counted) for e in build.kept)
