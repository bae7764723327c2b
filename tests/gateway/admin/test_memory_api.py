"""Staged note writes on the admin API (the dashboard's "Staged notes"): list, approve, reject, behind the token."""
from __future__ import annotations

from pathlib import Path

from agent.memory.notes import NotesStore
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.admin.helpers import admin_gateway, config_for

CHAT = "telegram:-100"


async def test_pending_writes_are_listed_and_decided_through_the_api(fake_openai: FakeOpenAI, home: Path) -> None:
    config = config_for(home, fake_openai.base_url)
    notes = NotesStore(home, config.memory).chat(CHAT)
    first = notes.add("memory", "The team deploys on Fridays.", untrusted="group_member").pending
    second = notes.add("memory", "Standup is at 9:30.", untrusted="tool_output").pending
    assert first is not None and second is not None
    async with admin_gateway(config) as admin:
        async with admin.http.get(admin.url + "/api/memory/pending") as resp:
            assert resp.status == 401  # no token, no list
        status, listing = await admin.get("/api/memory/pending")
        assert status == 200
        assert [(row["chat"], row["id"], row["origin"]) for row in listing["pending"]] == [
            (CHAT, first.id, "group_member"), (CHAT, second.id, "tool_output")]
        status, approved = await admin.send("POST", f"/api/memory/pending/{first.id}/approve?chat={CHAT}")
        assert (status, approved["ok"], approved["outcome"]) == (200, True, "written")
        status, rejected = await admin.send("POST", f"/api/memory/pending/{second.id}/reject?chat={CHAT}")
        assert (status, rejected["ok"]) == (200, True)
        status, missing = await admin.send("POST", f"/api/memory/pending/{second.id}/approve?chat={CHAT}")
        assert status == 404 and "No staged write" in missing["message"]
        status, bad = await admin.send("POST", f"/api/memory/pending/{second.id}/approve")
        assert status == 400 and "chat" in bad["error"]
        _, after = await admin.get("/api/memory/pending")
    assert after["pending"] == []
    assert [entry.text for entry in notes.snapshot().memory] == ["The team deploys on Fridays."]
