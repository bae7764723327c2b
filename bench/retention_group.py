"""Retention in group chats: IRC logs with facts planted by several speakers, compressed as the gateway does.

Each IRC log (`group_chat_irc.jsonl`, first `--messages` lines) becomes a
shared group session: every line reaches the history as the gateway records
it (`(not addressed to you) nick (id …): text` for chatter, `nick (id …): text` for a
mention, see `gateway.sessions.lines`; `--format irc` keeps the
data's own `[nick] text` with `name`). Facts are planted by four of the log's
own speakers among its first half, in the wordings people use to state an
exact value in a chat ("note for everyone: the value of X is Y", "X is Y",
"X = Y", "set X to Y", "X: Y", "we agreed on Y for X", a bare code given as
the answer to a question, in English, German, French, Spanish, Russian and
Chinese), each with its own exact token. Every `--turn-every` lines someone
mentions the bot: before the turn the gateway's hygiene check runs
(`gateway.sessions.hygiene.check_hygiene`, hard limit `--hard-limit` messages) and
compresses when it says so, the bot answers, and the preflight check may
compress too. At the end one more mention asks for the facts: the answering
request (system prompt + history + question) is searched for every planted
sentence VERBATIM.

Summaries: prune-only (keeps nothing), llm-random (keeps each line with p
`--keep`), fallback; sections: none, ledger, ledger+words (what `chorus run`
configures). `overhead` is the answering request's token increase over `none`.

    .venv/bin/python bench/retention.py --group [--window 32000] [--hard-limit 300] [--format gateway|irc]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adapters.base import InboundMessage
from agent.context import ContextCompressor
from agent.messages import Message, assistant, system, user
from agent.session_files import SessionRecord, read_sessions
from agent.settings import CompressionSettings
from agent.tokens import TokenCounter
from bench.retention import (
    CONFIGS,
    MIN_COMPRESSIONS,
    SUMMARY_KINDS,
    TARGET_OVERHEAD,
    TARGET_RETENTION,
    Table,
    Tally,
    _sections,
    _summarizer,
    print_table,
)
from gateway.sessions.hygiene import check_hygiene
from gateway.sessions.lines import render

GROUP_FILE = "group_chat_irc.jsonl"
SYSTEM_PROMPT = "You are a helpful assistant in a group chat."
BOT_REPLY = "noted."
FACTS_PER_LOG = 12
SPEAKERS = 4

_THINGS = (
    "staging password", "door code", "build number", "rollout token", "release tag", "vpn pin", "backup key",
    "ticket id", "meeting room", "api quota", "canary slot", "invoice ref",
)
_SYLLABLES = ("ka", "ro", "mi", "zu", "te", "lo", "vex", "dra", "qui", "no")


def _token(rng: random.Random) -> str:
    """An exact value of one of the shapes people paste into chats."""
    shape = rng.randrange(6)
    if shape == 0:
        return f"{rng.choice('QXZKB')}{rng.choice('QXZKB')}-{rng.randint(1000, 9999)}-{rng.choice('ABCDEF')}"
    if shape == 1:
        return str(rng.randint(1000, 99999))
    if shape == 2:
        return "-".join(rng.choice(_SYLLABLES) + rng.choice(_SYLLABLES) for _ in range(2)) + f"-{rng.randint(10, 99)}"
    if shape == 3:
        return f"v{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}"
    if shape == 4:
        return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(7))
    return f"{rng.choice(_SYLLABLES)}_{rng.choice(_SYLLABLES)}_{rng.randint(100, 999)}"


# (statement, or None) for one planted fact; a question template plants two lines.
STATEMENTS: tuple[Callable[[str, str], str], ...] = (
    lambda thing, token: f"note for everyone: the value of the {thing} is {token}",
    lambda thing, token: f"the {thing} is {token}",
    lambda thing, token: f"{thing} = {token}",
    lambda thing, token: f"ok, set the {thing} to {token} please",
    lambda thing, token: f"{thing}: {token}",
    lambda thing, token: f"we agreed on {token} for the {thing}",
    lambda thing, token: f"FYI the new {thing} is now {token}, don't lose it",
    lambda thing, token: f"der Wert für {thing} ist {token}",
    lambda thing, token: f"la valeur de {thing} est {token}",
    lambda thing, token: f"acordamos {token} para el {thing}",
    lambda thing, token: f"значение {thing} — {token}",
    lambda thing, token: f"{thing}的值是{token}",
)
QUESTION = "what's the {thing} again?"


@dataclass(frozen=True, slots=True)
class GroupLog:
    lines: tuple[tuple[str, str], ...]  # (nick, text) in order, planted lines included
    facts: tuple[str, ...]  # the planted sentences (without the speaker)


def _speakers(record: SessionRecord) -> list[str]:
    counts = Counter(m.name for m in record.messages if m.name)
    return [name for name, _ in counts.most_common(SPEAKERS)] or ["ann", "bob", "cy", "dee"]


def _body(message: Message) -> str:
    text = message.text
    return text.split("] ", 1)[1] if text.startswith("[") and "] " in text else text


def plant(record: SessionRecord, limit: int) -> GroupLog:
    """The first `limit` lines of the log with facts planted by several of its speakers in its first half."""
    rng = random.Random(zlib.crc32(record.id.encode()))
    lines = [(m.name or "someone", _body(m)) for m in record.messages[:limit] if m.role == "user"]
    speakers = _speakers(record)
    positions = sorted(rng.sample(range(5, max(6, len(lines) // 2)), FACTS_PER_LOG), reverse=True)
    facts: list[str] = []
    things = rng.sample(_THINGS, FACTS_PER_LOG)
    for index, (position, thing) in enumerate(zip(positions, things, strict=True)):
        token = _token(rng)
        speaker = speakers[index % len(speakers)]
        if index % 4 == 3:  # a question, answered with the bare token by another speaker
            asker = speakers[(index + 1) % len(speakers)]
            lines[position:position] = [(asker, QUESTION.format(thing=thing)), (speaker, token)]
            facts.append(token)
        else:
            sentence = STATEMENTS[index % len(STATEMENTS)](thing, token)
            lines.insert(position, (speaker, sentence))
            facts.append(sentence)
    return GroupLog(tuple(lines), tuple(facts))


def _line(nick: str, text: str, form: str, *, observed: bool = True) -> Message:
    """One line as stored: `[nick] text`, or as the gateway renders it (sender name and id; chatter labelled)."""
    if form == "irc":
        return user(f"[{nick}] {text}", name=nick)
    said = InboundMessage(platform="irc", chat_id="bench", chat_type="group", user_id=f"{zlib.crc32(nick.encode()):x}",
                          user_name=nick, text=text, message_id="0", timestamp=0.0)
    return user(render(said, text, shared=True, observed=observed))


@dataclass(frozen=True, slots=True)
class GroupRun:
    window: int
    hard_limit: int
    turn_every: int
    form: str
    keep: float


async def run_log(log: GroupLog, kind: str, config: str, run: GroupRun, seed: int, counter: TokenCounter) -> Tally:
    """Feed the log as the gateway would; count the planted facts in the final answering request."""
    settings = CompressionSettings(hygiene_hard_message_limit=run.hard_limit)
    compressor = ContextCompressor(
        settings, context_length=run.window, counter=counter, summarizer=_summarizer(kind, seed, run.keep),
        sections=_sections(config, settings),
    )
    outcome = Tally(planted=len(log.facts))
    history: list[Message] = []
    prompt = system(SYSTEM_PROMPT)
    started = time.perf_counter()
    stalled: int | None = None

    async def turn(question: Message) -> None:
        nonlocal history, stalled
        decision = check_hygiene(
            history, last_prompt_tokens=0, context_length=run.window, hard_message_limit=run.hard_limit,
            stalled_at=stalled,
        )
        if decision.compress:
            outcome.steps += 1
            result = await compressor.compress([prompt, *history], trigger="hygiene")
            if result.changed:
                outcome.compressions += 1
                history = [m for m in result.messages if m.role != "system"]
                stalled = None
            else:
                stalled = len(history)
        history.append(question)
        if compressor.should_compress_preflight([prompt, *history], ()):
            result = await compressor.compress([prompt, *history], trigger="preflight")
            outcome.compressions += result.changed
            if result.changed:
                history = [m for m in result.messages if m.role != "system"]

    for index, (nick, text) in enumerate(log.lines, 1):
        history.append(_line(nick, text, run.form))
        if index % run.turn_every == 0:
            await turn(_line(nick, "@bot what do you think?", run.form, observed=False))
            history.append(assistant(BOT_REPLY))
    await turn(_line("asker", "@bot list every value that was noted here", run.form, observed=False))
    outcome.seconds = time.perf_counter() - started
    request = [prompt, *history]
    text = "\n".join(message.text for message in request)
    outcome.lost = [fact for fact in log.facts if fact not in text]
    outcome.kept = outcome.planted - len(outcome.lost)
    outcome.tokens = counter.count_messages(request)
    outcome.fewest_compressions = outcome.compressions
    return outcome


async def run_group(args: argparse.Namespace, counter: TokenCounter) -> int:
    path = Path(args.data) / GROUP_FILE
    if not path.is_file():
        print(f"missing {path}", file=sys.stderr)
        return 2
    run = GroupRun(args.window, args.hard_limit, args.turn_every, args.format, args.keep)
    table: Table = {(kind, config): Tally() for kind in SUMMARY_KINDS for config in CONFIGS}
    records = list(read_sessions(path))[: args.logs or None]
    print(
        f"group chats: {FACTS_PER_LOG} facts planted per log by {SPEAKERS} speakers, first {args.messages} lines, "
        f"window {run.window:,}, hygiene hard limit {run.hard_limit} messages, a mention every {run.turn_every} "
        f"lines, lines as {'[nick] text' if run.form == 'irc' else 'the gateway renders them'}"
    )
    for index, record in enumerate(records):
        log = plant(record, args.messages)
        for kind in SUMMARY_KINDS:
            for config in CONFIGS:
                tally = await run_log(log, kind, config, run, index + 1, counter)
                table[(kind, config)].add(tally)
        print(f"  {record.id[:60]:<60} {len(log.lines):>5} lines", file=sys.stderr)
    print_table(f"{GROUP_FILE} as group sessions", table, len(records))
    return group_verdict(table)


def group_verdict(table: Table) -> int:
    """Both section configs must keep >= 99% after >= 3 compressions in every log, each summary kind."""
    status = 0
    fewest = min(tally.fewest_compressions for tally in table.values())
    ok = fewest >= MIN_COMPRESSIONS
    status |= not ok
    print(f"\nEvery log compressed at least {MIN_COMPRESSIONS} times: {'yes' if ok else 'NO'} (fewest {fewest})")
    for config in CONFIGS[1:]:
        retention = min(table[(kind, config)].share for kind in SUMMARY_KINDS)
        overheads = [table[(kind, config)].tokens / table[(kind, "none")].tokens - 1 for kind in SUMMARY_KINDS]
        kept_ok, cost_ok = retention >= TARGET_RETENTION, max(overheads) <= TARGET_OVERHEAD
        status |= not (kept_ok and cost_ok)
        shown = ", ".join(f"{kind} {value:+.1%}" for kind, value in zip(SUMMARY_KINDS, overheads, strict=True))
        print(
            f"TARGET {config}: kept >= {TARGET_RETENTION:.0%} {'MET' if kept_ok else 'MISSED'} (lowest {retention:.1%}); "
            f"overhead <= {TARGET_OVERHEAD:.0%} {'MET' if cost_ok else 'MISSED'} ({shown})"
        )
        for kind in SUMMARY_KINDS:
            lost = table[(kind, config)].lost
            if lost:
                print(f"  lost ({kind}, {config}): " + "; ".join(lost[:6]))
    return status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("group-chat mode (--group)")
    group.add_argument("--window", type=int, default=32_000, help="the model's context window")
    group.add_argument("--hard-limit", type=int, default=300, help="compression.hygiene_hard_message_limit")
    group.add_argument("--turn-every", type=int, default=20, help="lines between two mentions of the bot")
    group.add_argument("--messages", type=int, default=1200, help="lines of each log used")
    group.add_argument("--logs", type=int, default=0, help="only the first N logs (0: all)")
    group.add_argument("--format", choices=("gateway", "irc"), default="gateway", help="how a line is stored")


__all__ = ["add_arguments", "plant", "run_group", "run_log"]
