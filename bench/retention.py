"""Retention of exact facts through successive compressions, with and without the fact ledger.

Plants facts into real sessions (`--data`, default `../shared/data`): three
are appended to the first user message (the protected opening of the first
compression) and nine more arrive as three user messages inserted early in
the session (between tool groups): constraints in six languages, values with
units, ports, times, versions, paths, URLs, ticket ids, identifiers and
decisions, each one sentence with session-specific values. Each session is
then grown in `--steps` (5) chunks: compress, append the next chunk to the
compressed result, compress again... (forced, like `/compress`). At the end it
counts the planted sentences present VERBATIM anywhere in the final context,
and its tokens (cl100k).

Summaries compared:
  prune-only   the summariser returns nothing useful ("None."): the middle is
               dropped, old tool results pruned; only the sections carry facts;
  fallback     the deterministic fallback summary (no model);
  llm-random   the LLM path with a scripted summariser that copies each user
               sentence and each line of the previous summary with probability
               `--keep` (0.5) and drops the rest: a summary model of random quality.
Each with: no section (`none`), the fact ledger (`ledger`), and the ledger plus
the user-words section (`ledger+words`); `overhead` is the final-context token
increase over `none` for the same summary kind and the same sessions.

The window of each session is its own size (at least 8K, at most
`--context-length`): the whole session would just fit, so every step compresses.

    .venv/bin/python bench/retention.py [--data DIR] [--steps 5] [--keep 0.5] [--include-chat]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path[0] != str(ROOT):  # ahead of bench/ (a script's folder), whose gateway.py would shadow the package
    sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402

from agent.context import ContextCompressor, FallbackOnly, HandoffSection, Summarizer, SummaryRequest  # noqa: E402
from agent.context.ledger import FactLedger  # noqa: E402
from agent.context.user_words import handoff_sections  # noqa: E402
from agent.messages import Message, user  # noqa: E402
from agent.session_files import SessionRecord, read_sessions  # noqa: E402
from agent.settings import CompressionSettings  # noqa: E402
from agent.tokens import TokenCounter, default_counter  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
AGENT_FILES = ("agent_sessions_minisweagent.jsonl", "agent_sessions_taubench_native.jsonl")
CHAT_FILES = ("group_chat_irc.jsonl",)
MIN_WINDOW = 8_000
TARGET_RETENTION = 0.99
TARGET_OVERHEAD = 0.15
MIN_COMPRESSIONS = 3
SUMMARY_KINDS = ("prune-only", "fallback", "llm-random")
CONFIGS = ("none", "ledger", "ledger+words")
# Planted messages: where in the first chunk they go (fractions of it), after the opening.
PLANT_POSITIONS = (0.2, 0.45, 0.7)
FIRST_MESSAGE_FACTS = 3
FACTS_PER_MESSAGE = 3

_NAMES = ("Priya", "Jonas", "Mei", "Sofia", "Dmitri", "Amara", "Lucas", "Noor")
_WORDS = ("falcon", "harbor", "quartz", "meadow", "cobalt", "ember", "summit", "willow")
FACT_TEMPLATES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: f"Never run the migrations against the {r.choice(_WORDS)} production database.",
    lambda r: f"Always keep the public API of the {r.choice(_WORDS)}_{r.randint(2, 99)} module backwards compatible.",
    lambda r: f"Don't add new dependencies to requirements-{r.choice(_WORDS)}.txt without asking me.",
    lambda r: f"Bitte niemals direkt auf den Branch release-{r.randint(10, 99)} pushen.",
    lambda r: f"Ne modifie jamais le fichier config/{r.choice(_WORDS)}_{r.randint(1, 9)}.toml.",
    lambda r: f"Nunca borres los registros de la tabla audit_{r.choice(_WORDS)}.",
    lambda r: f"所有提交信息必须使用英文并引用工单 OPS-{r.randint(100, 999)}。",
    lambda r: f"Никогда не отключай проверку типов в пайплайне {r.choice(_WORDS)}.",
    lambda r: f"The staging API listens on port {r.randint(20000, 29999)}.",
    lambda r: f"Set the request timeout to {r.randint(11, 89)} seconds.",
    lambda r: f"The {r.choice(_WORDS)} cache must not exceed {r.randint(3, 60) * 64} MB.",
    lambda r: f"We pin the client library to v{r.randint(2, 9)}.{r.randint(0, 30)}.{r.randint(1, 20)}.",
    lambda r: f"The maintenance window starts at {r.randint(0, 5):02d}:{r.choice((0, 15, 30, 45)):02d} UTC.",
    lambda r: f"The deployment config lives in /etc/{r.choice(_WORDS)}/deploy-{r.randint(100, 999)}.yaml.",
    lambda r: f"Put the benchmark script in tools/bench/run_{r.choice(_WORDS)}_{r.randint(1, 99)}.py.",
    lambda r: f"The runbook is at https://wiki.example.com/ops/runbook-{r.randint(1000, 9999)}.",
    lambda r: f"This work is tracked in INFRA-{r.randint(1000, 9999)}.",
    lambda r: f"It relates to the regression reported in #{r.randint(10000, 99999)}.",
    lambda r: f"The service account for this task is svc_{r.choice(_WORDS)}_{r.randint(100, 999)}.",
    lambda r: f"We decided to use PostgreSQL {r.randint(12, 17)}.{r.randint(1, 9)} for the analytics store.",
    lambda r: f"Мы решили хранить журналы {r.randint(8, 90)} дней.",
    lambda r: f"My name is {r.choice(_NAMES)} and I review every change to the {r.choice(_WORDS)} service.",
)


@dataclass(frozen=True, slots=True)
class Planted:
    messages: tuple[Message, ...]
    facts: tuple[str, ...]
    cuts: tuple[int, ...]  # end index (exclusive) of each growing prefix


def _boundary(messages: Sequence[Message], index: int) -> int:
    """The first index at or after `index` that does not split a tool group."""
    while index < len(messages) and (messages[index].role == "tool" or messages[index - 1].tool_calls):
        index += 1
    return index


def plant(record: SessionRecord, steps: int) -> Planted:
    """The session with facts planted early, and the cut points of its growing prefixes."""
    rng = random.Random(zlib.crc32(record.id.encode()))
    sentences = [template(rng) for template in rng.sample(FACT_TEMPLATES, FIRST_MESSAGE_FACTS + 3 * FACTS_PER_MESSAGE)]
    messages = list(record.messages)
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    opening, rest = sentences[:FIRST_MESSAGE_FACTS], sentences[FIRST_MESSAGE_FACTS:]
    if first_user is not None and isinstance(messages[first_user].content, str):
        messages[first_user] = messages[first_user].with_content(f"{messages[first_user].text}\n\n{' '.join(opening)}")
    else:
        rest = sentences
    first_cut = len(messages) // steps
    positions = sorted({_boundary(messages, max(5, int(first_cut * share))) for share in PLANT_POSITIONS})
    groups = [rest[i::len(positions)] for i in range(len(positions))]
    for position, group in sorted(zip(positions, groups, strict=True), reverse=True):
        messages.insert(position, user("A note for later: " + " ".join(group)))
    cuts = [_boundary(messages, len(messages) * k // steps) for k in range(1, steps)] + [len(messages)]
    return Planted(tuple(messages), tuple(sentences), tuple(cuts))


class PruneOnly:
    """A summariser that keeps nothing: only the handoff sections carry facts."""

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        return "None."


_SENTENCE = re.compile(r"(?<=[.!?。])\s+")


class ForgetfulSummarizer:
    """A scripted model: copies each user sentence and previous-summary line with probability `keep`.

    Deterministic per (seed, call); the same request always gets the same summary.
    """

    def __init__(self, seed: int, keep: float) -> None:
        self._seed = seed
        self._keep = keep
        self._calls = 0

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        self._calls += 1
        rng = random.Random(self._seed * 1000 + self._calls)
        kept: list[str] = []
        for line in (request.previous_summary or "").splitlines():
            if line.startswith("- ") and rng.random() < self._keep:
                kept.append(line)
        for message in request.turns:
            if message.role == "user":
                kept.extend(f"- {s.strip()}" for s in _SENTENCE.split(message.text) if s.strip() and rng.random() < self._keep)
        budget_chars = request.budget_tokens * 4
        body: list[str] = []
        for line in kept:
            if sum(len(x) + 1 for x in body) + len(line) > budget_chars:
                break
            body.append(line)
        return "## Goal\nContinue the task.\n\n## Critical context\n" + ("\n".join(body) or "None.")


@dataclass(slots=True)
class Tally:
    kept: int = 0
    planted: int = 0
    tokens: int = 0
    compressions: int = 0
    steps: int = 0
    seconds: float = 0.0
    lost: list[str] = field(default_factory=list)
    fewest_compressions: int = 1 << 30  # in any one session

    def add(self, outcome: Tally) -> None:
        self.fewest_compressions = min(self.fewest_compressions, outcome.fewest_compressions)
        self.kept += outcome.kept
        self.planted += outcome.planted
        self.tokens += outcome.tokens
        self.compressions += outcome.compressions
        self.steps += outcome.steps
        self.seconds += outcome.seconds
        self.lost.extend(outcome.lost)

    @property
    def share(self) -> float:
        return self.kept / self.planted if self.planted else 0.0


def _sections(config: str, settings: CompressionSettings) -> tuple[HandoffSection, ...]:
    if config == "none":
        return ()
    if config == "ledger":
        return (FactLedger(max_tokens=settings.fact_ledger_max_tokens, protect_first_n=settings.protect_first_n),)
    return handoff_sections(settings)  # what the gateway configures: the ledger skips what user words show


def _summarizer(kind: str, seed: int, keep: float) -> Summarizer:
    if kind == "prune-only":
        return PruneOnly()
    if kind == "fallback":
        return FallbackOnly()
    return ForgetfulSummarizer(seed, keep)


async def run_session(
    planted: Planted, kind: str, config: str, *, window: int, keep: float, seed: int, counter: TokenCounter
) -> Tally:
    """Grow the session chunk by chunk, compressing after each; count the planted facts left verbatim."""
    settings = CompressionSettings()
    compressor = ContextCompressor(
        settings, context_length=window, counter=counter, summarizer=_summarizer(kind, seed, keep),
        sections=_sections(config, settings),
    )
    outcome = Tally(planted=len(planted.facts))
    context: list[Message] = []
    start = 0
    started = time.perf_counter()
    for cut in planted.cuts:
        context.extend(planted.messages[start:cut])
        start = cut
        result = await compressor.compress(context, trigger="manual", force=True)
        outcome.steps += 1
        outcome.compressions += result.outcome == "compressed"
        context = list(result.messages)
    outcome.seconds = time.perf_counter() - started
    text = "\n".join(message.text for message in context)
    outcome.lost = [fact for fact in planted.facts if fact not in text]
    outcome.kept = outcome.planted - len(outcome.lost)
    outcome.tokens = counter.count_messages(context)
    outcome.fewest_compressions = outcome.compressions
    return outcome


Table = dict[tuple[str, str], Tally]


def _window(messages: Sequence[Message], counter: TokenCounter, cap: int) -> int:
    return max(MIN_WINDOW, min(cap, counter.count_messages(messages)))


async def run_file(path: Path, args: argparse.Namespace, counter: TokenCounter) -> Table:
    table: Table = {(kind, config): Tally() for kind in SUMMARY_KINDS for config in CONFIGS}
    for index, record in enumerate(read_sessions(path)):
        planted = plant(record, args.steps)
        window = _window(planted.messages, counter, args.context_length)
        for kind in SUMMARY_KINDS:
            for config in CONFIGS:
                outcome = await run_session(
                    planted, kind, config, window=window, keep=args.keep, seed=index + 1, counter=counter
                )
                table[(kind, config)].add(outcome)
        print(f"  {record.id[:60]:<60} {len(planted.messages):>5} msgs, window {window:,}", file=sys.stderr)
    return table


def print_table(title: str, table: Table, sessions: int) -> None:
    print(f"\n{title} ({sessions} sessions)")
    print(
        f"{'summary':<11} {'sections':<13} {'kept verbatim':>15} {'final tokens':>13} {'overhead':>9} "
        f"{'extra tok/kept fact':>19} {'compressions':>12} {'seconds':>8}"
    )
    for kind in SUMMARY_KINDS:
        base = table[(kind, "none")]
        for config in CONFIGS:
            tally = table[(kind, config)]
            extra = tally.tokens - base.tokens
            overhead = f"{extra / base.tokens:+.1%}" if config != "none" and base.tokens else "-"
            per_fact = f"{extra / tally.kept:,.0f}" if config != "none" and tally.kept else "-"
            print(
                f"{kind:<11} {config:<13} {tally.kept:>5}/{tally.planted:<4}{tally.share:>6.1%} {tally.tokens:>13,} "
                f"{overhead:>9} {per_fact:>19} {tally.compressions:>5}/{tally.steps:<6} {tally.seconds:>8.1f}"
            )


def merge(tables: Sequence[Table]) -> Table:
    total: Table = {(kind, config): Tally() for kind in SUMMARY_KINDS for config in CONFIGS}
    for table in tables:
        for key, tally in table.items():
            total[key].add(tally)
    return total


def verdict(table: Table) -> int:
    """Print the targets for the agent sessions; 0 when both are met."""
    status = 0
    fewest = min(tally.fewest_compressions for tally in table.values())
    ok = fewest >= MIN_COMPRESSIONS
    status |= not ok
    print(f"\nEvery session compressed at least {MIN_COMPRESSIONS} times in a row: {'yes' if ok else 'NO'} (fewest {fewest})")
    retention = min(table[(kind, "ledger")].share for kind in SUMMARY_KINDS)
    ok = retention >= TARGET_RETENTION
    status |= not ok
    print(
        f"TARGET kept verbatim with the ledger, every summary kind: >= {TARGET_RETENTION:.0%}: "
        f"{'MET' if ok else 'MISSED'} (lowest {retention:.1%})"
    )
    overheads = {kind: table[(kind, "ledger")].tokens / table[(kind, "none")].tokens - 1 for kind in SUMMARY_KINDS}
    worst = max(overheads.values())
    ok = worst <= TARGET_OVERHEAD
    status |= not ok
    shown = ", ".join(f"{kind} {value:+.1%}" for kind, value in overheads.items())
    print(f"TARGET ledger token overhead vs none: <= {TARGET_OVERHEAD:.0%}: {'MET' if ok else 'MISSED'} ({shown})")
    words = {kind: table[(kind, "ledger+words")].tokens / table[(kind, "none")].tokens - 1 for kind in SUMMARY_KINDS}
    within = max(words.values()) <= TARGET_OVERHEAD
    shown = ", ".join(f"{kind} {value:+.1%}" for kind, value in words.items())
    print(
        f"(ledger + user words vs none: {shown}; "
        f"{'also within' if within else 'OVER'} {TARGET_OVERHEAD:.0%} - user words have their own budget, "
        f"reported, not part of the ledger target)"
    )
    for kind in SUMMARY_KINDS:
        lost = table[(kind, "ledger")].lost
        if lost:
            print(f"  lost with ledger ({kind}): " + "; ".join(lost[:5]))
    return status


async def main_async(args: argparse.Namespace) -> int:
    counter = default_counter()
    if args.group:
        from bench.retention_group import run_group  # imports this module: loaded on demand

        return await run_group(args, counter)
    if args.gateway:
        from bench.retention_gateway import run_gateway

        return await run_gateway(args, counter)
    names = AGENT_FILES + (CHAT_FILES if args.include_chat else ())
    agent_tables: list[Table] = []
    agent_sessions = 0
    print(
        f"retention: {FIRST_MESSAGE_FACTS + 3 * FACTS_PER_MESSAGE} facts planted per session, {args.steps} growing "
        f"steps with a forced compression after each, llm-random keeps each sentence with p={args.keep}"
    )
    for name in names:
        path = args.data / name
        if not path.is_file():
            print(f"missing {path}", file=sys.stderr)
            return 2
        sessions = sum(1 for _ in read_sessions(path))
        table = await run_file(path, args, counter)
        print_table(name, table, sessions)
        if name in AGENT_FILES:
            agent_tables.append(table)
            agent_sessions += sessions
    total = merge(agent_tables)
    print_table("ALL AGENT SESSIONS", total, agent_sessions)
    return verdict(total)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory with the session files")
    parser.add_argument("--steps", type=int, default=5, help="growing prefixes, one forced compression after each")
    parser.add_argument("--keep", type=float, default=0.5, help="llm-random: chance a summary keeps a sentence")
    parser.add_argument("--context-length", type=int, default=128_000, help="largest window given to a session")
    parser.add_argument("--include-chat", action="store_true", help="also run the IRC group chats (slow)")
    parser.add_argument("--group", action="store_true", help="the group-chat mode (see bench/retention_group.py)")
    parser.add_argument("--gateway", action="store_true", help="through chorus run (see bench/retention_gateway.py)")
    from bench import retention_gateway, retention_group

    retention_group.add_arguments(parser)
    retention_gateway.add_arguments(parser)
    args = parser.parse_args()
    if args.steps < 3:
        parser.error("--steps must be at least 3 (three successive compressions)")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(40), logger_factory=structlog.PrintLoggerFactory(sys.stderr)
    )
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
