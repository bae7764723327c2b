"""Screenshot of the admin dashboard with sample sessions and compressions (headless Chromium).

Serves the real admin app (`gateway.admin.build_admin_app`) over a fixed
backend on loopback, opens `/dashboard` in headless Chromium and saves a PNG
(default `/tmp/chorus-dashboard.png`). Needs `/usr/bin/chromium`
(`apt-get install -y chromium`). Not a test: for people to look at.

    .venv/bin/python bench/dashboard_screenshot.py [--output FILE] [--chromium PATH] [--select]
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
# bench/ holds a gateway.py that would shadow the gateway package: import from the repository root.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

from aiohttp import web  # noqa: E402

from agent.context.engine import CompressionResult, SummaryKind, Trigger  # noqa: E402
from agent.messages import user  # noqa: E402
from gateway.admin import (  # noqa: E402
    CompressOutcome,
    EventLog,
    SessionDetail,
    SessionNotFound,
    SessionView,
    build_admin_app,
)
from gateway.config import ChorusConfig  # noqa: E402
from gateway.ops.health import Readiness  # noqa: E402
from gateway.ops.live_config import LiveConfig  # noqa: E402
from gateway.ops.metrics import Metrics  # noqa: E402

TOKEN = "screenshot-token"
SESSIONS = [  # key, tokens now, compressions
    ("agent:default:telegram:group:-1001234", 101_500, 3),
    ("agent:default:slack:thread:C0ops:1716.42", 71_000, 2),
    ("agent:default:discord:group:8812", 58_200, 1),
    ("agent:default:web:dm:alice", 23_400, 1),
    ("agent:default:telegram:dm:5551", 9_800, 0),
    ("agent:default:slack:dm:D77", 2_100, 0),
]
SAMPLE_SUMMARY = """[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted.
## Goal
Move the billing service to the new cluster before Friday.
## Constraints & preferences
- No downtime during EU business hours.
- Keep the Postgres major version at 15.
## Completed actions
- Drained node pool A; migrated 14 of 20 workers.
## Pending / remaining work
- Migrate the last 6 workers; switch DNS."""
COMPRESSIONS: list[tuple[int, Trigger, int, int, SummaryKind]] = [  # session index, trigger, before, after, kind
    (0, "post_response", 66_100, 15_800, "llm"), (1, "post_response", 64_900, 14_200, "llm"),
    (0, "post_response", 65_300, 17_100, "llm"), (3, "manual", 40_200, 9_100, "llm"),
    (2, "hygiene", 112_000, 22_500, "fallback"), (1, "error_recovery", 128_400, 19_900, "llm"),
    (0, "hygiene", 109_800, 24_000, "llm"),
]


@dataclass
class SampleBackend:
    views: list[SessionView]

    async def sessions(self) -> list[SessionView]:
        return self.views

    async def session(self, key: str) -> SessionDetail:
        for v in self.views:
            if v.key == key:
                return SessionDetail(v, "sample-" + v.chat, SAMPLE_SUMMARY, archived_messages=v.messages * 3)
        raise SessionNotFound(key)

    async def compress(self, key: str) -> CompressOutcome:
        raise SessionNotFound(key)

    async def readiness(self) -> Readiness:
        return Readiness(store_open=True, coordinator=True, adapters_started=True)


def sample() -> tuple[SampleBackend, EventLog]:
    views = [
        SessionView(key=key, platform=key.split(":")[2], chat=key.split(":")[4], messages=tokens // 60, tokens=tokens,
                    tokens_source="reported", context_length=128_000, threshold=64_000, hygiene_threshold=108_800,
                    compressions=count, last_activity=time.time(), live=True, busy=i == 0)
        for i, (key, tokens, count) in enumerate(SESSIONS)
    ]
    ticks = itertools.count(time.time() - 1800, 1800 / (len(COMPRESSIONS) + 3))
    events = EventLog(clock=lambda: next(ticks))
    for index, trigger, before, after, kind in COMPRESSIONS:
        key = SESSIONS[index][0]
        kept = (user("kept"),) * (after // 60)  # only the count matters to the event log
        events.compression(key, CompressionResult("compressed", trigger, kept, before, after, summary_kind=kind),
                           messages_before=before // 60)
        if trigger == "hygiene":
            events.notice(key, f"hygiene: {before} tokens (reported) >= 85% of the window (108800) → compressed")
    events.error(SESSIONS[1][0], "turn failed (error=ModelUnavailable)")
    events.notice(None, "config compression.hygiene_hard_message_limit: 5000 → 3000 (token:1a2b3c4d)")
    return SampleBackend(views), events


async def shoot(output: Path, chromium: str, *, select: bool = False) -> int:
    backend, events = sample()
    app = build_admin_app(backend, metrics=Metrics(), token=TOKEN, live=LiveConfig(ChorusConfig()), events=events)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fragment = "&session=" + quote(SESSIONS[0][0], safe="") if select else ""
    try:
        with tempfile.TemporaryDirectory() as profile:
            process = await asyncio.create_subprocess_exec(
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--window-size=1280,900",
                f"--screenshot={output}", f"http://127.0.0.1:{port}/dashboard#token={TOKEN}" + fragment,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            _out, err = await asyncio.wait_for(process.communicate(), 90)
    finally:
        await runner.cleanup()
    if process.returncode != 0 or not output.exists():
        print(f"chromium failed ({process.returncode}): {err.decode(errors='replace')[-1500:]}", file=sys.stderr)
        return 1
    print(f"dashboard screenshot: {output} ({output.stat().st_size:,} bytes, {len(SESSIONS)} sessions, "
          f"{len(COMPRESSIONS)} compressions)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("/tmp/chorus-dashboard.png"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--select", action="store_true", help="open the busiest session's detail panel")
    args = parser.parse_args()
    return asyncio.run(shoot(args.output, args.chromium, select=args.select))


if __name__ == "__main__":
    sys.exit(main())
