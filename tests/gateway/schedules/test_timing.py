"""When a job fires: cron in a time zone, one-shot `at`, shortest gaps, and config errors naming job and key."""
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from chorus_errors import ConfigError
from gateway.config import load_config
from gateway.schedules.recurrence import When, WhenError


def _utc(year: int, month: int = 1, day: int = 1, hour: int = 0, minute: int = 0) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp()


def test_a_weekday_cron_in_berlin_fires_at_nine_local_on_the_next_weekday() -> None:
    when = When.parse(cron="0 9 * * 1-5", at=None, timezone="Europe/Berlin")
    friday_noon = _utc(2026, 12, 4, 12, 0)
    assert list(when.between(friday_noon, _utc(2026, 12, 8, 12, 0))) == [_utc(2026, 12, 7, 8, 0), _utc(2026, 12, 8, 8, 0)]


def test_occurrences_are_strictly_after_the_start_and_up_to_the_end() -> None:
    when = When.parse(cron="*/10 * * * *", at=None)
    assert list(when.between(_utc(2026, 1, 1, 9, 0), _utc(2026, 1, 1, 9, 30))) == [
        _utc(2026, 1, 1, 9, 10), _utc(2026, 1, 1, 9, 20), _utc(2026, 1, 1, 9, 30)]


def test_a_one_shot_time_without_an_offset_is_in_the_jobs_zone_and_fires_once() -> None:
    when = When.parse(cron=None, at="2026-12-24T09:00", timezone="Asia/Tokyo")
    assert when.at == _utc(2026, 12, 24, 0, 0)
    assert list(when.between(0, _utc(2027, 1, 1))) == [when.at]
    assert when.next_after(when.at) is None


@pytest.mark.parametrize(("cron", "gap"), [("*/10 * * * *", 10), ("0,1 9 * * *", 1), ("0 9 * * 1-5", 1440)])
def test_the_shortest_gap_is_found_among_the_next_firings(cron: str, gap: float) -> None:
    assert When.parse(cron=cron, at=None).shortest_gap_minutes(_utc(2026, 12, 7, 0, 0)) == gap


@pytest.mark.parametrize(("kwargs", "names"), [
    ({"cron": "61 * * * *", "at": None}, "cron '61 * * * *'"),
    ({"cron": "* * *", "at": None}, "cron '* * *'"),
    ({"cron": None, "at": "tomorrow"}, "at 'tomorrow'"),
    ({"cron": "* * * * *", "at": None, "timezone": "Mars/Olympus"}, "timezone 'Mars/Olympus'"),
    ({"cron": None, "at": None}, "give exactly one of cron"),
    ({"cron": "* * * * *", "at": "2026-12-24T09:00"}, "give exactly one of cron"),
])
def test_bad_timing_is_a_clear_error_naming_the_key(kwargs: dict[str, str | None], names: str) -> None:
    with pytest.raises(WhenError) as raised:
        When.parse(**kwargs)  # type: ignore[arg-type]
    assert str(raised.value).startswith(names)


@pytest.mark.parametrize(("job", "key", "says"), [
    ('{cron: "0 25 * * *", chat: "telegram:1", prompt: hi}', "schedules.digest.cron", "Bad hour"),
    ('{cron: "0 9 * * *", timezone: Europe/Berlinn, chat: "telegram:1", prompt: hi}', "schedules.digest.timezone",
     "not a known time zone"),
    ('{at: "24.12.2026 9:00", chat: "telegram:1", prompt: hi}', "schedules.digest", "not an ISO time"),
    ('{cron: "0 9 * * *", chat: "-100123", prompt: hi}', "schedules.digest.chat", "PLATFORM:CHAT_ID"),
])
def test_a_bad_operator_job_stops_the_config_naming_the_job_and_key(tmp_path: Path, job: str, key: str, says: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"schedules:\n  digest: {job}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert f"{key}: got" in str(raised.value)
    assert says in str(raised.value)


def test_a_home_channel_must_name_platform_and_chat(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("gateway: {home_channel: telegram}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="gateway.home_channel: got 'telegram'; .*PLATFORM:CHAT_ID"):
        load_config(path)
