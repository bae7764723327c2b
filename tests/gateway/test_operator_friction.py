"""Small operator fixes: nested PATCH bodies, the restart-required line names its keys, no stale lock files."""
from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
import structlog

from adapters.web import WebAdapter
from gateway.config import ChorusConfig
from gateway.intake.journal import InboundJournal
from gateway.ops.live_config import LiveConfig
from gateway.ops.logs import configure_logging
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.admin.helpers import admin_gateway, config_for


async def test_patch_accepts_nested_objects_as_well_as_dotted_keys(fake_openai: FakeOpenAI, home: Path) -> None:
    """{"compression": {"threshold": 0.6}} changes compression.threshold; a dict-valued setting stays one value."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        status, body = await admin.send("PATCH", "/api/config", {
            "compression": {"threshold": 0.6, "model_thresholds": {"gpt-4o": 0.4}}, "compression.protect_last_n": 7})
        empty_status, _ = await admin.send("PATCH", "/api/config", {"compression": {}})
    assert status == 200, body
    assert {c["key"]: c["new"] for c in body["changed"]} == {
        "compression.threshold": 0.6, "compression.model_thresholds": {"gpt-4o": 0.4}, "compression.protect_last_n": 7}
    assert empty_status == 400  # an empty object is no change, nested or not


async def test_patch_with_a_deeply_nested_body_is_a_400(fake_openai: FakeOpenAI, home: Path) -> None:
    """A body nested past the JSON parser's limit is a one-line 400, not a 500 with a traceback."""
    async with admin_gateway(config_for(home, fake_openai.base_url)) as admin:
        raw = '{"compression": ' * 5000 + "1" + "}" * 5000
        async with admin.http.patch(admin.url + "/api/config", data=raw, headers=admin.headers()) as response:
            status, body = response.status, await response.json()
    assert (status, body["error"].startswith("the body is nested too deeply")) == (400, True)


def test_restart_required_line_names_its_keys_never_values(tmp_path: Path) -> None:
    """Through the real log pipeline (with redaction) the line lists the changed keys; no secret value appears."""
    path = tmp_path / "config.yaml"
    path.write_text("admin:\n  port: 9090\n", encoding="utf-8")
    live = LiveConfig(ChorusConfig(), path=path)
    path.write_text("admin:\n  port: 9191\n  token: s3cret-admin-token-value\n", encoding="utf-8")
    out = io.StringIO()
    configure_logging(fmt="json", stream=out)
    try:
        live.reload()
    finally:
        structlog.reset_defaults()
    [line] = [json.loads(raw) for raw in out.getvalue().splitlines() if "config.restart_required" in raw]
    assert line["settings"] == ["admin.port", "admin.token"]
    assert "s3cret-admin-token-value" not in out.getvalue()


def test_lock_files_of_exited_processes_are_cleaned(tmp_path: Path) -> None:
    """Each start used to leave `<node>.lock` behind; a clean stop removes its own, recovery sweeps the old ones."""
    inflight = tmp_path / "inflight"
    for node in ("old-1", "old-2"):
        journal = InboundJournal(inflight, node=node)
        journal.open()
        journal.close()
    (inflight / "crashed-3.lock").write_text("", encoding="utf-8")  # a process killed before it wrote anything
    current = InboundJournal(inflight, node="now")
    current.open()
    current.recover()
    assert sorted(p.name for p in inflight.iterdir()) == ["now", "now.lock"]
    current.close()
    assert list(inflight.iterdir()) == []


async def test_an_over_long_request_url_is_one_warning_line_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    """A 20 KB request line gets its 400 and one `http.bad_request` line naming the error; no traceback anywhere."""
    out = io.StringIO()
    configure_logging(fmt="json", stream=out)
    adapter = WebAdapter(host="127.0.0.1", port=0)
    await adapter.start(asyncio.Queue())
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", adapter.port)
        writer.write(b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
    finally:
        await adapter.stop()
        structlog.reset_defaults()
    lines = [json.loads(raw) for raw in out.getvalue().splitlines()]
    assert status_line.startswith(b"HTTP/1.0 400")
    assert [(e["event"], e["error"], e["status"]) for e in lines if e["event"] == "http.bad_request"] == [
        ("http.bad_request", "LineTooLong", 400)]
    assert "Traceback" not in out.getvalue() + capsys.readouterr().err
    assert "aaaaaaaaaa" not in out.getvalue()
