"""A first-time operator's frictions: typos, unset variables, doctor beside its gateway, pipes, reloads."""
from __future__ import annotations

import argparse
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from structlog.testing import capture_logs

from chorus_errors import ConfigError
from gateway.build import build_adapters
from gateway.cli import main
from gateway.cli.doctor import handle
from gateway.config import load_config, parse_config
from gateway.ops.health import Readiness, health_app
from gateway.ops.live_config import LiveConfig

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, config: dict[str, object]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


async def _rows(config: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    await handle(argparse.Namespace(config=str(config), json=True))
    return {row["check"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}


@pytest.mark.parametrize(("raw", "expected"), [
    ({"gateway": {"busy_input_mod": "queue"}}, "config: gateway.busy_input_mod: unknown key; did you mean busy_input_mode?"),
    ({"modle": {"name": "m"}}, "config: modle: unknown key; did you mean model?"),
    ({"chats": {"telegram:1": {"sytem_prompt": "x"}}},
     "config: chats.telegram:1.sytem_prompt: unknown key; did you mean system_prompt?"),
    ({"gateway": {"zzzz": 1}}, "config: gateway.zzzz: unknown key; see config.yaml.example for the allowed keys"),
])
def test_a_mistyped_key_gets_did_you_mean(raw: dict[str, object], expected: str) -> None:
    """An unknown key names the closest real key of its own section, not a list of every key."""
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert str(caught.value) == expected


def test_a_token_read_from_an_unset_variable_names_the_variable(home: Path) -> None:
    """`token: ${TELEGRAM_BOT_TOKEN:-}` with the variable unset: the error names TELEGRAM_BOT_TOKEN, not only the key."""
    config = parse_config({"home": str(home), "platforms": {"telegram": {"enabled": True, "token": "${TELEGRAM_BOT_TOKEN:-}"}}},
                          env={})
    with pytest.raises(ConfigError) as caught:
        build_adapters(config)
    assert caught.value.key == "platforms.telegram.token"
    assert "${TELEGRAM_BOT_TOKEN}" in str(caught.value)


async def test_doctor_names_the_unset_token_variable(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Doctor's platform row says which variable to export."""
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    path = _write(tmp_path, {"home": str(tmp_path / "h"), "admin": {"port": 0}, "platforms": {
        "web": {"port": 0}, "telegram": {"enabled": True, "token": "${TELEGRAM_BOT_TOKEN:-}"}}})
    rows = await _rows(path, capsys)
    assert rows["platforms.telegram"]["ok"] is False
    assert "${TELEGRAM_BOT_TOKEN}" in str(rows["platforms.telegram"]["detail"])


@pytest.fixture
async def running_admin() -> AsyncIterator[int]:
    """A chorus admin server's health routes on a port of its own choosing (the real handler)."""

    async def ready() -> Readiness:
        return Readiness(store_open=True, coordinator=True, adapters_started=True)

    runner = web.AppRunner(health_app(ready))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None
    yield int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]
    await runner.cleanup()


async def test_doctor_beside_its_own_running_gateway_passes_the_ports_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], running_admin: int
) -> None:
    """The ports are busy because chorus itself holds them: its /healthz answers, so the row is ok and says so."""
    with socket.socket() as web_port:
        web_port.bind(("127.0.0.1", 0))
        web_port.listen()
        port = web_port.getsockname()[1]
        path = _write(tmp_path, {"home": str(tmp_path / "h"), "admin": {"host": "127.0.0.1", "port": running_admin},
                                 "platforms": {"web": {"host": "127.0.0.1", "port": port}}})
        rows = await _rows(path, capsys)
    assert rows["ports"]["ok"] is True
    assert str(rows["ports"]["detail"]).startswith("held by the running chorus")


async def test_doctor_names_the_redis_url_without_its_password(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unreachable Redis is named by its URL; the password is never printed."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        path = _write(tmp_path, {"home": str(tmp_path / "h"), "admin": {"port": 0}, "platforms": {"web": {"port": 0}},
                                 "redis": {"url": f"redis://:hunter2@127.0.0.1:{port}/0"}})
        rows = await _rows(path, capsys)
    assert rows["redis"]["ok"] is False
    assert f"redis://:***@127.0.0.1:{port}/0" in str(rows["redis"]["detail"])
    assert "hunter2" not in json.dumps(rows)


def test_sessions_export_to_dash_writes_standard_output(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`-o -` writes JSON Lines to stdout (for a pipe) and no file named '-'."""
    config = tmp_path / "config.yaml"
    config.write_text(f"home: {home}\n", encoding="utf-8")
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "s1", "messages": [{"role": "user", "content": "hello"}]}) + "\n", encoding="utf-8")
    assert main(["sessions", "import", str(source), "--config", str(config)]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    assert main(["sessions", "export", "-o", "-", "--config", str(config)]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["s1"]
    assert "exported 1 sessions to stdout" in err
    assert not (tmp_path / "-").exists()


def test_a_reload_keeps_a_runtime_change_the_file_did_not_touch(tmp_path: Path) -> None:
    """PATCH then SIGHUP with the file unchanged: the runtime value stays (and is said); a file edit then wins."""
    path = _write(tmp_path, {"home": str(tmp_path / "h"), "compression": {"threshold": 0.5}})
    live = LiveConfig(load_config(path), path=path)
    live.update({"compression.threshold": 0.7}, who="admin")
    with capture_logs() as logs:
        kept = live.reload()
    assert (live.current().compression.threshold, kept.runtime_kept) == (0.7, ("compression.threshold",))
    assert [e["settings"] for e in logs if e["event"] == "config.runtime_kept"] == [["compression.threshold"]]
    _write(tmp_path, {"home": str(tmp_path / "h"), "compression": {"threshold": 0.6}})
    with capture_logs() as logs:
        live.reload()
    assert live.current().compression.threshold == 0.6
    assert [e["settings"] for e in logs if e["event"] == "config.runtime_replaced"] == [["compression.threshold"]]


def test_config_yaml_is_ignored_by_git() -> None:
    """An operator's config.yaml (tokens in it) is never committed by accident."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/config.yaml" in lines
