"""`chorus compress FILE`: compress saved sessions offline, like `/compress` (docs/contract.md §5.1).

Owns the command line: reads a session file (JSON array or JSON Lines),
forces one compression of each session with the configured compressor,
prints one row per session (text, or JSON with `--report json`), and with
`--output` writes the results in the input's format. `--explain` adds what
each compression removed, summarised and kept, and the fact ledger it wrote.
Bad input exits 2 naming the file and line; a compression that aborted exits 1.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from agent.context import CompressionResult, FallbackOnly, HandoffSection, Summarizer, build_compressor, build_summarizer
from agent.context.ledger import FactLedger
from agent.context.user_words import UserWords, handoff_sections
from agent.messages import Message
from agent.session_files import SessionRecord, detect_format, read_sessions, write_sessions
from agent.tokens import TokenCounter, default_counter
from chorus_errors import ConfigError, MessageFormatError
from gateway.config import ChorusConfig, load_config
from gateway.ops.logs import configure_logging

PROGRESS_MIN_SESSIONS = 5


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compress", help="compress saved sessions offline and report what was done",
        description="Force one compression of each session in FILE (like /compress) and report what was done.",
    )
    parser.add_argument("file", metavar="FILE", help="a JSON array of chat messages, or JSON Lines of session objects")
    parser.add_argument("--context-length", type=int, default=None, metavar="N",
                        help="the model's context window in tokens (default: model.context_length)")
    parser.add_argument("--summarizer", choices=("llm", "fallback"), default="fallback",
                        help="which summariser writes the handoff summary (default: fallback). llm: the configured model "
                             "(auxiliary.compression first); fallback: the deterministic summary, no network")
    parser.add_argument("--output", default=None, metavar="OUT", help="write the compressed sessions here")
    parser.add_argument("--report", choices=("text", "json"), default="text", help="json: one JSON object per session")
    parser.add_argument("--explain", action="store_true",
                        help="also show what was removed, summarised and kept (one line per affected message) and the fact ledger")
    parser.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    parser.set_defaults(handler=handle)


class _CurrentStderr:
    """Writes to whatever `sys.stderr` is at the time (it may be swapped after logging is configured)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _summarizer(choice: str, config: ChorusConfig) -> Summarizer:
    if choice == "fallback":
        return FallbackOnly()
    summarizer = build_summarizer(config.model, config.auxiliary)
    if not summarizer.available:
        raise ConfigError(
            "--summarizer llm needs a model: set model.name (and model.base_url, model.api_key) "
            "or auxiliary.compression.model in the config",
            key="model.name",
        )
    return summarizer


def report_row(record: SessionRecord, result: CompressionResult, tokens_before: int, tokens_after: int) -> dict[str, Any]:
    """The `--report json` object for one session."""
    return {
        "id": record.id,
        "outcome": result.outcome,
        "messages_before": len(record.messages),
        "messages_after": len(result.messages),
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "summary_kind": result.summary_kind,
        "pruned_tool_results": result.pruned_tool_results,
        "elapsed_ms": round(result.elapsed_ms, 1),
        "reason": result.reason,
    }


def _text_row(row: dict[str, Any]) -> str:
    if row["outcome"] != "compressed":
        return f"{row['id']}: {row['outcome']} ({row['reason']}); {row['messages_before']} messages unchanged"
    return (
        f"{row['id']}: {row['messages_before']} -> {row['messages_after']} messages, "
        f"{row['tokens_before']:,} -> {row['tokens_after']:,} tokens, {row['summary_kind']} summary, "
        f"{row['pruned_tool_results']} tool results pruned, {row['elapsed_ms']:.0f} ms"
    )


def _progress(stream: TextIO, done: int, total: int, label: str) -> None:
    width = 30
    filled = width * done // total
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:40]:<40}")
    if done == total:
        stream.write("\n")
    stream.flush()


async def compress_records(
    records: list[SessionRecord], config: ChorusConfig, summarizer: Summarizer, counter: TokenCounter
) -> list[tuple[SessionRecord, CompressionResult, dict[str, Any]]]:
    """Force one compression per session; each session gets a fresh engine state."""
    show_progress = sys.stderr.isatty() and len(records) >= PROGRESS_MIN_SESSIONS
    out = []
    for done, record in enumerate(records, start=1):
        if show_progress:
            _progress(sys.stderr, done - 1, len(records), record.id)
        compressor = build_compressor(
            config.compression, config.model, config.auxiliary, counter=counter, summarizer=summarizer,
            sections=handoff_sections(config.compression),
        )
        result = await compressor.compress(record.messages, trigger="offline", force=True)
        tokens_before = counter.count_messages(record.messages)
        tokens_after = counter.count_messages(result.messages)
        out.append((replace(record, messages=result.messages), result, report_row(record, result, tokens_before, tokens_after)))
        if show_progress:
            _progress(sys.stderr, done, len(records), record.id)
    return out


def _preview(message: Message, width: int = 72) -> str:
    text = " ".join(message.text.split()) or " ".join(f"-> {c.name}({' '.join(c.arguments.split())})" for c in message.tool_calls)
    text = text or "(empty)"
    return text if len(text) <= width else text[: width - 1] + "…"


def explain_lines(original: Sequence[Message], result: CompressionResult, counter: TokenCounter,
                  sections: Sequence[HandoffSection]) -> list[str]:
    """`--explain`: counts by fate, one line per summarised or pruned message, then the handoff sections."""
    explain = result.explain
    if result.outcome != "compressed" or explain is None:
        return [f"  nothing removed: {result.outcome} ({result.reason})"]
    fates = explain.fates()
    count = Counter(fate.fate for fate in fates)
    pruned = Counter(fate.pruned for fate in fates if fate.pruned)
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(pruned.items()))
    lines = [f"  kept verbatim: {count['head']} head, {count['pinned']} pinned, {count['tail']} tail; "
             f"summarised and removed: {count['summarised']}; pruned in place: {sum(pruned.values())}"
             + (f" ({kinds})" if kinds else "")]
    for fate in fates:
        if fate.fate == "summarised" or fate.pruned:
            what = "summarised" if fate.fate == "summarised" else f"pruned ({fate.pruned}), in {fate.fate}"
            lines.append(f"  #{fate.index:<4} {fate.role:<9} {what:<28} {_preview(original[fate.index])}")
    dropped = [original[index] for index in explain.summarised]
    for section in sections:  # recomputed on the same span: the section is deterministic
        if isinstance(section, FactLedger):
            ledger = section.compute(dropped, None, counter)
            lines.append(f"  fact ledger: {len(ledger.kept)} entries, {ledger.tokens} tokens ({len(ledger.superseded)} "
                         f"superseded, {len(ledger.duplicates)} duplicates, {len(ledger.over_budget)} over budget, "
                         f"{len(ledger.in_user_words)} shown in user words)")
            lines.extend(f"    {entry.line}" for entry in ledger.kept)
        elif isinstance(section, UserWords):
            words = section.compute(dropped, None, counter)
            lines.append(f"  user words: {len(words.kept)} messages verbatim, {words.tokens} tokens "
                         f"({len(words.omitted)} left out for space, {words.repeats} repeats)")
            lines.extend(f"    [turn {m.turn}] {_preview(Message(role='user', content=m.text))}" for m in words.kept)
    return lines


async def handle(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    # stdout carries the report; log lines go to stderr, and only warnings unless debugging.
    configure_logging(
        level="debug" if config.logging.level == "debug" else "warning", fmt=config.logging.format, stream=_CurrentStderr()
    )
    if args.context_length is not None:
        if args.context_length < 1024:
            raise ConfigError(f"--context-length must be at least 1024 tokens, got {args.context_length}")
        config = config.model_copy(update={"model": config.model.model_copy(update={"context_length": args.context_length})})
    path = Path(args.file)
    if not path.is_file():
        raise MessageFormatError(f"{path}: no such file")
    records = list(read_sessions(path))  # validate everything before doing anything
    summarizer = _summarizer(args.summarizer, config)
    try:
        results = await compress_records(records, config, summarizer, default_counter())
    finally:
        await summarizer.close()
    sections = handoff_sections(config.compression)
    for original, (_, result, row) in zip(records, results, strict=True):
        explained = explain_lines(original.messages, result, default_counter(), sections) if args.explain else []
        if args.report == "json":
            print(json.dumps({**row, "explain": explained} if args.explain else row, ensure_ascii=False))
        else:
            print("\n".join([_text_row(row), *explained]))
    if args.output:
        write_sessions(Path(args.output), [record for record, _, _ in results], detect_format(path))
    return 1 if any(result.outcome == "aborted" for _, result, _ in results) else 0
