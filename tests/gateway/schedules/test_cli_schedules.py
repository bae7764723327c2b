"""`chorus schedules list|add|remove` on a home's store: what it prints, and bad input named with exit code 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.cli import main


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"home": str(tmp_path / "home"), "schedules": {
        "digest": {"cron": "0 18 * * *", "chat": "slack:C1", "prompt": "daily digest"}}}), encoding="utf-8")
    return str(path)


def test_add_list_and_remove_a_job(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedules", "add", "--config", config, "--chat", "telegram:-100", "--cron", "0 9 * * 1-5",
                 "--timezone", "Europe/Berlin", "--prompt", "stand-up", "--thread", "11"]) == 0
    job_id = capsys.readouterr().out.split()[2].rstrip(":")
    assert main(["schedules", "list", "--config", config, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(j["id"], j["chat"], j["thread"], j["origin"]) for j in listed] == [
        ("digest", "slack:C1", None, "operator"), (job_id, "telegram:-100", "11", "cli")]
    assert main(["schedules", "list", "--config", config, "--chat", "telegram:-100"]) == 0
    assert capsys.readouterr().out.startswith(f"{job_id} · 0 9 * * 1-5 (Europe/Berlin) · next ")
    assert main(["schedules", "remove", job_id, "--config", config]) == 0
    assert capsys.readouterr().out == f"removed job {job_id}\n"
    assert main(["schedules", "remove", "digest", "--config", config]) == 2
    assert "set in the gateway's config (schedules.digest)" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "says"), [
    (["--chat", "telegram:-100", "--cron", "0 9 * *", "--prompt", "x"], "cron '0 9 * *' is not a valid cron"),
    (["--chat", "telegram:-100", "--at", "2026-12-24T09:00", "--timezone", "Moon/Base", "--prompt", "x"],
     "timezone 'Moon/Base' is not a known time zone"),
    (["--chat", "telegram", "--cron", "0 9 * * *", "--prompt", "x"], "--chat 'telegram': write PLATFORM:CHAT"),
    (["--cron", "0 9 * * *", "--prompt", "x"], "add needs --chat"),
])
def test_bad_input_is_named_with_exit_code_2(config: str, capsys: pytest.CaptureFixture[str], args: list[str],
                                            says: str) -> None:
    assert main(["schedules", "add", "--config", config, *args]) == 2
    assert says in capsys.readouterr().err
