"""bench/retention.py on the small sessions of tests/data: planting, growing, and the ledger keeping every fact."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from agent.context._facts import extract_facts
from agent.session_files import read_sessions
from agent.tokens import default_counter

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_retention", ROOT / "bench" / "retention.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_planting_keeps_tool_groups_whole_and_every_fact_is_extractable() -> None:
    """Planted facts sit in user messages outside tool groups, each one a clause the ledger extracts verbatim."""
    bench = _bench()
    record = next(iter(read_sessions(DATA / "minisweagent_django_15957.jsonl")))
    planted = bench.plant(record, 5)
    assert len(planted.facts) == 12 and len(set(planted.facts)) == 12
    assert len(planted.messages) == len(record.messages) + 3
    assert list(planted.cuts) == sorted(planted.cuts) and planted.cuts[-1] == len(planted.messages)
    for cut in planted.cuts[:-1]:
        assert planted.messages[cut].role != "tool" and not planted.messages[cut - 1].tool_calls
    user_texts = [m.text for m in planted.messages if m.role == "user"]
    for fact in planted.facts:
        holder = next(text for text in user_texts if fact in text)
        assert any(fact in extracted.text for extracted in extract_facts(holder, "user")), fact


async def test_ledger_keeps_every_planted_fact_where_a_useless_summary_keeps_none() -> None:
    """Growing a real session in 5 steps: with the ledger all planted facts stay verbatim, with prune-only none do."""
    bench = _bench()
    counter = default_counter()
    record = next(iter(read_sessions(DATA / "minisweagent_django_15957.jsonl")))
    planted = bench.plant(record, 5)
    window = bench._window(planted.messages, counter, 128_000)
    with_ledger = await bench.run_session(planted, "prune-only", "ledger", window=window, keep=0.5, seed=1, counter=counter)
    without = await bench.run_session(planted, "prune-only", "none", window=window, keep=0.5, seed=1, counter=counter)
    assert with_ledger.compressions >= 3 and without.compressions >= 3
    assert (with_ledger.kept, with_ledger.lost) == (12, [])
    assert without.kept < 12
    assert with_ledger.tokens < without.tokens * 1.15
