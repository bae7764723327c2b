"""`chorus doctor` and `chorus run` in the first hour: which file, busy ports, no side effects, one-line config errors."""
from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import yaml
from structlog.testing import capture_logs

from gateway.cli import main
from gateway.cli.doctor import handle
from gateway.cli.run import warn_at_start
from gateway.config import parse_config


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def _write(tmp_path: Path, config: dict[str, object]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


async def _rows(config: str | None, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, object]]]:
    code = await handle(argparse.Namespace(config=config, json=True))
    return code, {row["check"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}


async def test_doctor_names_the_file_it_read_and_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The config check names the file; a home that does not exist yet is reported, not created."""
    home = tmp_path / "not" / "yet"
    path = _write(tmp_path, {"home": str(home), "admin": {"port": 0}, "platforms": {"web": {"port": 0}}})
    _, rows = await _rows(str(path), capsys)
    assert rows["config"]["detail"] == f"valid: read {path.resolve()}"
    assert (rows["home"]["ok"], "does not exist yet" in str(rows["home"]["detail"])) == (True, True)
    assert not (tmp_path / "not").exists()


async def test_doctor_says_when_no_config_file_was_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --config, $CHORUS_CONFIG or ./config.yaml, doctor says it checked the built-in defaults."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CHORUS_CONFIG", raising=False)
    _, rows = await _rows(None, capsys)
    assert "no config file found" in str(rows["config"]["detail"])


async def test_doctor_reports_a_busy_port_by_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A port another program listens on fails the ports check, naming the setting and the address."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = _write(tmp_path, {"home": str(tmp_path / "h"), "admin": {"port": 0},
                                 "platforms": {"web": {"host": "127.0.0.1", "port": port}}})
        code, rows = await _rows(str(path), capsys)
    assert (code, rows["ports"]["ok"]) == (1, False)
    assert rows["ports"]["detail"] == f"cannot listen on platforms.web.port 127.0.0.1:{port} (in use)"


async def test_doctor_names_the_model_url_it_tried(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unreachable model endpoint's failure says which URL was tried."""
    path = _write(tmp_path, {"home": str(tmp_path / "h"), "admin": {"port": 0}, "platforms": {"web": {"port": 0}},
                             "model": {"name": "m", "base_url": "http://127.0.0.1:1/v1", "api_key": "sk-x",
                                       "retry": {"max_attempts": 1}}})
    _, rows = await _rows(str(path), capsys)
    assert rows["model"]["ok"] is False
    assert str(rows["model"]["detail"]).endswith("(tried http://127.0.0.1:1/v1)")


@pytest.mark.parametrize(
    ("section", "key", "expected"),
    [
        ({"model": {"base_url": "localhost:8000/v1"}}, "model.base_url", "http://localhost:8000/v1"),
        ({"auxiliary": {"compression": {"base_url": "api.example.org/v1"}}}, "auxiliary.compression.base_url",
         "http://api.example.org/v1"),
        ({"redis": {"url": "localhost:6379"}}, "redis.url", "redis://127.0.0.1:6379/0"),
        ({"redis": {"url": "http://:hunter2@localhost:6379"}}, "redis.url", "redis://127.0.0.1:6379/0"),
    ],
)
@pytest.mark.parametrize("command", ["doctor", "run"])
def test_a_url_without_the_right_scheme_is_one_line_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: dict[str, object], key: str, expected: str,
    command: str,
) -> None:
    """run and doctor both exit 2 with one line naming the key and an example; a password is never echoed."""
    path = _write(tmp_path, {"home": str(tmp_path / "h"), **section})
    assert main([command, "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{key}: got" in err and expected in err
    assert "hunter2" not in err


def test_run_warns_when_the_summary_window_is_smaller_than_the_main_one() -> None:
    """`run` logs the same problem doctor fails on, with the fix."""
    config = parse_config({"model": {"name": "m", "context_length": 128000},
                           "auxiliary": {"compression": {"context_length": 32000}}}, env={})
    with capture_logs() as logs:
        warn_at_start(config)
    [line] = [e for e in logs if e["event"] == "config.summary_window_too_small"]
    assert (line["log_level"], line["problem"]) == (
        "warning", "summary model window 32,000 is smaller than the main model's 128,000")
