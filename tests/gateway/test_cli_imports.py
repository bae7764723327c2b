"""Offline `chorus` commands never load the OpenAI SDK, the platform libraries or the admin server."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data"
HEAVY = (
    "openai", "telegram", "discord", "slack_bolt", "slack_sdk", "gateway.admin", "gateway.build", "gateway.app",
    "aiohttp", "redis", "psycopg", "gateway.doctor",  # a SQLite home offline needs no HTTP, Redis, PostgreSQL or checks
    "opentelemetry",  # nor traces (telemetry is the daemon's)
)
# Runs one command in a fresh interpreter, then prints which of the heavy modules it loaded.
PROBE = """
import json, sys
from gateway.cli import main
code = main(sys.argv[2:])
print(json.dumps({"code": code, "loaded": [m for m in json.loads(sys.argv[1]) if m in sys.modules]}))
"""


def _loaded(args: list[str], cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.stdout, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    "args",
    [
        ["compress", str(DATA / "minisweagent_django_15957.jsonl"), "--summarizer", "fallback", "--config", "CONFIG"],
        ["memory", "show", "--chat", "web:c1", "--config", "CONFIG"],
        ["sessions", "--config", "CONFIG", "list"],
    ],
    ids=["compress", "memory", "sessions"],
)
def test_offline_command_loads_no_sdk_platform_or_admin(args: list[str], tmp_path: Path) -> None:
    """The command runs to completion without importing any of the daemon's heavy libraries."""
    config = tmp_path / "config.yaml"
    config.write_text(f"home: {tmp_path / 'home'}\n", encoding="utf-8")
    result = _loaded([str(config) if arg == "CONFIG" else arg for arg in args], tmp_path)
    assert result["loaded"] == []
    assert result["code"] in (0, 1)  # sessions list on an empty home exits 1 with a hint; what matters is the imports


def test_probe_sees_the_sdk_when_a_model_is_called(tmp_path: Path) -> None:
    """The probe itself works: `compress --summarizer llm` calls the model (a closed port), so it loads the SDK."""
    config = tmp_path / "config.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\nmodel:\n  name: m\n  base_url: http://127.0.0.1:9/v1\n  timeout_seconds: 5\n",
        encoding="utf-8",
    )
    args = ["compress", str(DATA / "minisweagent_django_15957.jsonl"), "--summarizer", "llm", "--config", str(config)]
    assert "openai" in _loaded(args, tmp_path)["loaded"]
