"""The config editor's API on a real gateway: every key described, secrets never read back, errors that name
the fix, restart keys saved to the file only, and the audit log of who changed what."""
from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

from gateway.admin.config_schema import config_schema
from gateway.config import ChorusConfig, load_config, parse_config
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.admin.helpers import TOKEN, admin_gateway, commented_config
from tests.gateway.coord.conftest import eventually

BOT_TOKEN = "123456:telegram-secret-never-shown"
NEW_BOT_TOKEN = "654321:another-secret-never-shown"


def config_file(tmp_path: Path, base_url: str) -> Path:
    """A commented config file with a Telegram token (Telegram itself off)."""
    return commented_config(tmp_path, base_url, telegram=f"    token: \"{BOT_TOKEN}\"  # from BotFather\n")


def test_every_key_has_a_description_a_type_and_a_default() -> None:
    """The editor shows each key with what it does: a key added without `Field(description=…)` fails here."""
    schema = config_schema(ChorusConfig())
    missing = [entry["key"] for entry in schema if not str(entry["description"]).strip()]
    assert missing == []
    by_key = {entry["key"]: entry for entry in schema}
    assert by_key["gateway.usage_footer"]["choices"] == ["off", "tokens", "cost"]
    assert (by_key["compression.threshold"]["applies"], by_key["admin.port"]["applies"]) == ("live", "restart")


def test_credentials_in_urls_and_mcp_headers_are_not_shown() -> None:
    """A Redis URL's password shows as ***; MCP servers (their env and headers carry keys) are masked whole."""
    config = parse_config({"redis": {"url": "redis://:hunter2@127.0.0.1:6379/0"}, "mcp": {"servers": {
        "tickets": {"url": "http://127.0.0.1:7000/mcp", "headers": {"Authorization": "Bearer s3cret-header"}}}}}, env={})
    schema = {entry["key"]: entry for entry in config_schema(config)}
    assert schema["redis.url"]["value"] == "redis://:***@127.0.0.1:6379/0"
    assert schema["mcp.servers"]["value"] == "<hidden>" and schema["mcp.servers"]["secret"] is True
    assert "hunter2" not in json.dumps(schema) and "s3cret-header" not in json.dumps(schema)


async def test_schema_shows_values_but_never_a_secret(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Current values and defaults for every key; a secret only as set or not, anywhere in the answer."""
    path = config_file(tmp_path, fake_openai.base_url)
    async with admin_gateway(load_config(path), path=path) as admin:
        status, body = await admin.get("/api/config/schema")
    keys = {entry["key"]: entry for entry in body["keys"]}
    assert status == 200 and body["path"] == str(path)
    assert keys["compression.threshold"]["value"] == 0.5 and keys["compression.threshold"]["default"] == 0.5
    assert keys["platforms.telegram.token"] == {**keys["platforms.telegram.token"], "secret": True, "value": "<hidden>"}
    assert keys["platforms.discord.token"]["value"] is None  # not set: says so, still nothing to read
    text = json.dumps(body)
    assert BOT_TOKEN not in text and TOKEN not in text and "sk-test-not-real" not in text


async def test_bad_edits_name_the_fix_and_change_nothing(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A value near a choice and a mistyped key get "did you mean"; a restart key without persist says so."""
    path = config_file(tmp_path, fake_openai.base_url)
    before = path.read_text(encoding="utf-8")
    async with admin_gateway(load_config(path), path=path) as admin:
        typo_value = await admin.send("PATCH", "/api/config?persist=true", {"gateway.usage_footer": "cots"})
        typo_key = await admin.send("PATCH", "/api/config?persist=true", {"gateway.usage_foter": "cost"})
        runtime_restart = await admin.send("PATCH", "/api/config", {"admin.port": 9999})
        version = admin.ops.live.version
    assert typo_value[0] == 400 and typo_value[1]["key"] == "gateway.usage_footer"
    assert typo_value[1]["error"].endswith("did you mean cost?")
    assert typo_key[0] == 400 and "did you mean gateway.usage_footer?" in typo_key[1]["error"]
    assert runtime_restart[0] == 400 and runtime_restart[1]["error"].startswith("restart needed: admin.port")
    assert version == 0 and path.read_text(encoding="utf-8") == before


async def test_edits_are_saved_with_comments_and_audited(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A live key applies and is saved; a secret that needs a restart is saved only, never echoed; SIGHUP and
    a file reload are audited as such; the audit lists them newest first."""
    path = config_file(tmp_path, fake_openai.base_url)
    async with admin_gateway(load_config(path), path=path) as admin:
        live = await admin.send("PATCH", "/api/config?persist=true", {"compression": {"threshold": 0.6}})
        secret = await admin.send("PATCH", "/api/config?persist=true", {"platforms.telegram.token": NEW_BOT_TOKEN})
        path.write_text(path.read_text(encoding="utf-8").replace("0.6 ", "0.7 "), encoding="utf-8")
        admin.ops.install_sighup(asyncio.get_running_loop())
        os.kill(os.getpid(), signal.SIGHUP)
        assert await eventually(lambda: _threshold_is(admin.ops.live.current(), 0.7), timeout=10)
        path.write_text(path.read_text(encoding="utf-8").replace("0.7 ", "0.8 "), encoding="utf-8")
        admin.ops.live.reload(who="file")
        status, audit = await admin.get("/api/config/audit")
        running_token = admin.ops.live.current().platforms.telegram.token
    text = path.read_text(encoding="utf-8")
    assert live[0] == 200 and live[1]["persisted"] is True and live[1]["mode"] == "edited"
    assert secret[0] == 200 and secret[1]["restart_needed"] == [] and secret[1]["persisted"] is True
    assert NEW_BOT_TOKEN not in json.dumps(secret[1])
    token_line = next(line for line in text.splitlines() if NEW_BOT_TOKEN in line)
    assert token_line.startswith(f"    token: \"{NEW_BOT_TOKEN}\"") and token_line.endswith("  # from BotFather")
    assert "threshold: 0.8 " in text
    assert "# half the window" in text and "# the team's bot" in text
    assert running_token is not None and running_token.get_secret_value() == NEW_BOT_TOKEN  # live: the adapter restarts
    rows = [(e["key"], e["old"], e["new"], e["who"], e["applies"]) for e in audit["entries"]]
    assert status == 200 and audit["scope"] == "this replica"
    assert rows == [
        ("compression.threshold", 0.7, 0.8, "file", "now"),
        ("compression.threshold", 0.6, 0.7, "SIGHUP", "now"),
        ("platforms.telegram.token", "<hidden>", "<hidden>", "admin token", "now"),
        ("compression.threshold", 0.5, 0.6, "admin token", "now"),
    ]
    assert BOT_TOKEN not in json.dumps(audit) and NEW_BOT_TOKEN not in json.dumps(audit)


async def _threshold_is(config: ChorusConfig, value: float) -> bool:
    return config.compression.threshold == value


async def test_a_restart_key_is_saved_for_the_next_start_and_says_why(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    path = config_file(tmp_path, fake_openai.base_url)
    async with admin_gateway(load_config(path), path=path) as admin:
        saved = await admin.send("PATCH", "/api/config?persist=true", {"admin.port": 9999})
        running_port = admin.ops.live.current().admin.port
        status, audit = await admin.get("/api/config/audit")
    assert saved[0] == 200 and saved[1]["restart_needed"] == ["admin.port"]
    assert saved[1]["note"].startswith("restart needed: admin.port (the admin listener binds at start)")
    assert "port: 9999" in path.read_text(encoding="utf-8") and running_port != 9999
    assert status == 200 and audit["entries"][0]["key"] == "admin.port" and audit["entries"][0]["applies"] == "after restart"
