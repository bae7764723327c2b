"""The dashboard in headless Chromium: fill bars, threshold/hygiene lines, compression markers, notices."""
from __future__ import annotations

import itertools
import time
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from gateway.admin import EventLog, build_admin_app
from gateway.config import ChorusConfig
from gateway.ops.live_config import LiveConfig
from gateway.ops.metrics import Metrics
from tests.gateway.admin.dashboard_support import FixedBackend, chromium, parse_dom, result, view
from tests.gateway.admin.helpers import TOKEN, serve_app

SUMMARY = "## Goal\nShip the release on Friday."
A, B, C = "agent:default:telegram:group:-100200", "agent:default:slack:thread:C42:171.5", "agent:default:web:dm:alice"


def sample_app() -> web.Application:
    """Three sessions, three compressions (two on A), a notice and an error."""
    backend = FixedBackend([view(A, 96_000, compressions=2), view(B, 70_400, compressions=1), view(C, 12_800)],
                           summaries={A: SUMMARY})
    ticks = itertools.count(time.time() - 300, 20)
    events = EventLog(clock=lambda: next(ticks))
    events.compression(A, result("post_response", 66_000, 14_000))
    events.compression(B, result("hygiene", 110_000, 21_000, kind="fallback"))
    events.compression(A, result("manual", 70_000, 12_500))
    events.notice(A, "hygiene: 5012 messages > hard limit 5000 → compressed")
    events.error(B, "turn failed (error=ModelUnavailable)")
    return build_admin_app(backend, metrics=Metrics(), token=TOKEN, live=LiveConfig(ChorusConfig()), events=events)


async def test_dashboard_draws_each_session_and_each_compression(tmp_path: Path) -> None:
    """Bars are as wide as each session's fill, the 50%/85% lines are drawn, one marker per compression."""
    app = sample_app()
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard#token={TOKEN}", tmp_path / "profile", "--dump-dom"))

    bars = {b["data-session"]: b for b in dom.with_class("bar")}
    assert {k: (b["data-fill-percent"], b["data-width"]) for k, b in bars.items()} == {
        A: ("75", "525.0"), B: ("55", "385.0"), C: ("10", "70.0")  # 700 px = 100% of the window
    }
    assert {k: b["class"] for k, b in bars.items()} == {A: "bar warn", B: "bar warn", C: "bar ok"}
    thresholds = dom.with_class("limit-line", "threshold")
    assert sorted((t["data-session"], t["data-percent"]) for t in thresholds) == sorted([(A, "50"), (B, "50"), (C, "50")])
    assert [h["data-percent"] for h in dom.with_class("limit-line", "hygiene")] == ["85"]
    markers = dom.with_class("compression")
    assert [(m["data-session"], m["data-trigger"], m["data-before"], m["data-after"], m["data-summary-kind"])
            for m in markers] == [
        (A, "post_response", "66000", "14000", "llm"),
        (A, "manual", "70000", "12500", "llm"),
        (B, "hygiene", "110000", "21000", "fallback"),
    ]
    listed = [(attrs.get("data-kind"), texts) for tag, attrs, texts in dom.found if tag == "li" and "data-kind" in attrs]
    assert [kind for kind, _ in listed] == ["error", "notice"]  # newest first
    body = next(attrs for tag, attrs, _ in dom.found if tag == "body")
    assert body.get("data-ready") == "true"


async def test_a_session_deep_link_opens_its_detail_with_summary_and_compressions(tmp_path: Path) -> None:
    """#session=<key> shows that session's last summary and its two compressions, newest first."""
    async with serve_app(sample_app()) as url:
        link = f"{url}/dashboard#token={TOKEN}&session={quote(A, safe='')}"
        dom = parse_dom(await chromium(link, tmp_path / "profile", "--dump-dom"))
    by_id = {attrs["id"]: (attrs, texts) for _tag, attrs, texts in dom.found if "id" in attrs}
    assert "hidden" not in by_id["detail"][0]
    assert (by_id["detail-key"][1], by_id["detail-summary"][1]) == ([A], [SUMMARY])
    rows = [attrs["data-trigger"] for tag, attrs, _ in dom.found if tag == "li" and "data-trigger" in attrs]
    assert rows == ["manual", "post_response"]


async def test_dashboard_without_a_token_asks_for_it(tmp_path: Path) -> None:
    """No token in the tab: the login form is shown and nothing is drawn."""
    app = build_admin_app(FixedBackend([view(A, 1000)]), metrics=Metrics(), token=TOKEN)
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard", tmp_path / "profile", "--dump-dom"))
    form = next(attrs for tag, attrs, _ in dom.found if attrs.get("id") == "login")
    board = next(attrs for tag, attrs, _ in dom.found if attrs.get("id") == "board")
    assert ("hidden" in form, "hidden" in board, dom.with_class("bar")) == (False, True, [])
