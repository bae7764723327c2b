"""Support for the dashboard tests: a fixed backend, real compression results, headless Chromium and a DOM reader."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from agent.context.engine import CompressionResult, Trigger
from gateway.admin.backend import CompressOutcome, SessionDetail, SessionNotFound, SessionView
from gateway.ops.health import Readiness

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_TIMEOUT = 60.0


def view(key: str, tokens: int, *, context_length: int = 128_000, threshold: int = 64_000, compressions: int = 0) -> SessionView:
    return SessionView(
        key=key, platform=key.split(":")[2], chat=key.split(":")[4], messages=tokens // 50, tokens=tokens,
        tokens_source="reported", context_length=context_length, threshold=threshold,
        hygiene_threshold=int(context_length * 0.85), compressions=compressions, last_activity=None, live=True,
    )


def result(trigger: Trigger, before: int, after: int, *, kind: str = "llm") -> CompressionResult:
    return CompressionResult(
        outcome="compressed", trigger=trigger, messages=(), tokens_before=before, tokens_after=after,
        summary_kind=kind,  # type: ignore[arg-type]
    )


@dataclass
class FixedBackend:
    """An `AdminBackend` over fixed views (the dashboard only reads)."""

    views: list[SessionView]
    summaries: dict[str, str] = field(default_factory=dict)

    async def sessions(self) -> list[SessionView]:
        return list(self.views)

    async def session(self, key: str) -> SessionDetail:
        for v in self.views:
            if v.key == key:
                return SessionDetail(v, "id-" + key, self.summaries.get(key))
        raise SessionNotFound(key)

    async def compress(self, key: str) -> CompressOutcome:
        raise SessionNotFound(key)

    async def readiness(self) -> Readiness:
        return Readiness(store_open=True, coordinator=True, adapters_started=True)


async def chromium(url: str, profile: Path, *extra: str) -> str:
    """Run headless Chromium on `url`; returns its stdout (the DOM with --dump-dom)."""
    process = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--virtual-time-budget=5000", *extra, url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), CHROMIUM_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        raise RuntimeError(f"chromium exited {process.returncode}: {err.decode(errors='replace')[-2000:]}")
    return out.decode()


class Elements(HTMLParser):
    """Every element of a DOM dump as (tag, attributes, text directly inside)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str], list[str]]] = []
        self._stack: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        texts: list[str] = []
        self.found.append((tag, {k: v or "" for k, v in attrs}, texts))
        self._stack.append(texts)

    def handle_endtag(self, tag: str) -> None:
        if self._stack:
            self._stack.pop()

    def handle_data(self, data: str) -> None:
        if self._stack and data.strip():
            self._stack[-1].append(data.strip())

    def with_class(self, *classes: str) -> list[dict[str, str]]:
        return [attrs for _tag, attrs, _t in self.found if set(classes) <= set(attrs.get("class", "").split())]


def parse_dom(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser
