"""The `schedule` tool: a job of the calling chat, thread and user; list and cancel only there; refusals as JSON."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.tools.base import ToolContext
from gateway.config import parse_config
from gateway.schedules.book import ScheduleBook
from gateway.schedules.store import SqliteScheduleStore
from gateway.schedules.tool import ScheduleTool
from tests.gateway.schedules.support import Clock

NOW = 1_796_558_400.0  # Sunday 2026-12-06 12:00 UTC
CAROL = ToolContext(chat_id="telegram:-100", session_id="s", user_id="6", thread_id="11", group=True)
BOB = ToolContext(chat_id="telegram:-100", session_id="s", user_id="5", group=True)


@pytest.fixture
def book(tmp_path: Path) -> Iterator[ScheduleBook]:
    store = SqliteScheduleStore(tmp_path / "schedules.db")
    store.open()
    config = parse_config({"scheduling": {"max_jobs_per_chat": 1, "min_interval_minutes": 15}})
    yield ScheduleBook(store, config=lambda: config, clock=Clock(NOW))
    store.close()


async def _call(tool: ScheduleTool, context: ToolContext, **arguments: str) -> dict[str, object]:
    answer: dict[str, object] = json.loads(await tool(arguments, context))
    return answer


async def test_add_list_and_cancel_in_the_calling_chat(book: ScheduleBook) -> None:
    tool = ScheduleTool(book)
    added = await _call(tool, CAROL, action="add", cron="0 9 * * 1-5", timezone="Europe/Berlin", prompt="stand-up")
    assert added["success"] is True and added["when"] == "0 9 * * 1-5 (Europe/Berlin)"
    [job] = book.jobs("telegram:-100")
    assert (job.thread, job.owner_id, job.chat_type, job.origin) == ("11", "6", "group", "user")
    listed = await _call(tool, BOB, action="list")
    assert listed["jobs"] == [f"{job.id} · 0 9 * * 1-5 (Europe/Berlin) · next 2026-12-07 08:00 UTC · last never · stand-up"]
    elsewhere = ToolContext(chat_id="telegram:-200", session_id="s", user_id="6")
    assert (await _call(tool, elsewhere, action="list"))["jobs"] == []
    refused = await _call(tool, BOB, action="cancel", id=job.id)
    assert refused == {"success": False, "error": f"Only the person who made job {job.id} or an admin can remove it."}
    assert (await _call(tool, CAROL, action="cancel", id=job.id)) == {"success": True, "cancelled": job.id}
    assert book.jobs() == []


@pytest.mark.parametrize(("arguments", "error"), [
    ({"action": "add", "cron": "*/5 * * * *", "prompt": "p"},
     "That schedule fires every 5 minutes; the shortest allowed interval is 15 minutes."),
    ({"action": "add", "cron": "0 9 * * *"}, "Give the prompt to run at that time."),
    ({"action": "add", "at": "2026-12-06T11:00:00+00:00", "prompt": "p"}, "That time has passed already; give a future time."),
    ({"action": "add", "cron": "0 9 * * *", "timezone": "CET+1", "prompt": "p"},
     "That time can't be used: timezone 'CET+1' is not a known time zone; write an IANA name such as UTC or Europe/Berlin"),
    ({"action": "cancel"}, "Give the id of the job to cancel (list shows them)."),
    ({"action": "pause"}, "action must be one of add, list, cancel"),
])
async def test_refusals_tell_the_model_what_to_change(book: ScheduleBook, arguments: dict[str, str], error: str) -> None:
    assert await _call(ScheduleTool(book), CAROL, **arguments) == {"success": False, "error": error}


async def test_a_chat_at_its_job_limit_gets_no_more(book: ScheduleBook) -> None:
    tool = ScheduleTool(book)
    assert (await _call(tool, CAROL, action="add", at="2026-12-24T09:00", prompt="presents"))["success"] is True
    second = await _call(tool, BOB, action="add", cron="0 9 * * *", prompt="p")
    assert second["error"] == "This chat already has the most scheduled jobs allowed (1, scheduling.max_jobs_per_chat)."
