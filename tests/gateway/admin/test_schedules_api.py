"""Scheduled jobs on the admin API (`/api/schedules`) and the dashboard's schedule list (headless Chromium)."""
from __future__ import annotations

from pathlib import Path

import aiohttp

from gateway.admin import build_admin_app
from gateway.admin.schedules_api import schedules_routes
from gateway.config import parse_config
from gateway.ops.live_config import LiveConfig
from gateway.ops.metrics import Metrics
from gateway.schedules.book import ScheduleBook
from gateway.schedules.store import SqliteScheduleStore
from tests.gateway.admin.dashboard_support import FixedBackend, chromium, parse_dom
from tests.gateway.admin.helpers import TOKEN, serve_app

NOW = 1_796_558_400.0  # 2026-12-06 12:00 UTC
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


async def test_add_list_remove_and_the_dashboard_list(tmp_path: Path) -> None:
    config = parse_config({"schedules": {"digest": {"cron": "0 18 * * *", "chat": "slack:C1", "prompt": "digest"}}})
    store = SqliteScheduleStore(tmp_path / "schedules.db")
    store.open()
    book = ScheduleBook(store, config=lambda: config, clock=lambda: NOW)
    store.claim("digest", NOW - 18 * 3600, node="a", now=NOW - 18 * 3600, status="sent")
    app = build_admin_app(FixedBackend([]), metrics=Metrics(), token=TOKEN, live=LiveConfig(config),
                          extra_routes=schedules_routes(book))
    async with serve_app(app) as url, aiohttp.ClientSession(headers=HEADERS) as http:
        body = {"chat": "telegram:-100", "cron": "30 9 * * 1-5", "timezone": "Europe/Berlin", "prompt": "stand-up"}
        async with http.post(f"{url}/api/schedules", json=body) as response:
            assert response.status == 201
            added = await response.json()
        assert (added["origin"], added["next_run"]) == ("api", NOW + 86_400 - 12 * 3600 + 8.5 * 3600)
        async with http.post(f"{url}/api/schedules", json={**body, "cron": "30 9 * *"}) as response:
            assert response.status == 400
            assert "cron '30 9 * *' is not a valid cron expression" in (await response.json())["error"]
        async with http.post(f"{url}/api/schedules", json={**body, "when": "soon"}) as response:
            assert response.status == 400 and "unknown field 'when'" in (await response.json())["error"]
        dom = parse_dom(await chromium(f"{url}/dashboard#token={TOKEN}", tmp_path / "profile", "--dump-dom"))
        async with http.delete(f"{url}/api/schedules/digest") as response:
            assert response.status == 409
        async with http.delete(f"{url}/api/schedules/{added['id']}") as response:
            assert response.status == 200
        async with http.delete(f"{url}/api/schedules/{added['id']}") as response:
            assert response.status == 404
        async with http.get(f"{url}/api/schedules") as response:
            assert [job["id"] for job in (await response.json())["jobs"]] == ["digest"]
        async with aiohttp.ClientSession() as anonymous, anonymous.get(f"{url}/api/schedules") as response:
            assert response.status == 401
    store.close()
    cells = [t[0] for tag, _a, t in dom.found if tag == "td" and t]
    assert cells[:6] == ["digest", "slack:C1", "0 18 * * * (UTC)", "next 2026-12-06 18:00 UTC",
                         "last 2026-12-05 18:00 UTC sent", "operator"]
    assert cells[6:12] == [added["id"], "telegram:-100", "30 9 * * 1-5 (Europe/Berlin)", "next 2026-12-07 08:30 UTC",
                           "last never", "api"]
