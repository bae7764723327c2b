"""The store seen by operators: doctor's store check per mode, /readyz while PostgreSQL is away, store metrics."""
from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import structlog
import yaml

from agent.store.postgres import SCHEMA_VERSION, PostgresSessionStore
from gateway.admin.events import EventLog
from gateway.admin.gateway_backend import GatewayBackend
from gateway.cli import main
from gateway.cli.doctor import handle
from gateway.ops.metrics import Metrics
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.harness import make_config, started
from tests.postgres import ADMIN_URL, fresh_database


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("chorus_health") as url:
        yield url


async def _store_row(tmp_path: Path, capsys: pytest.CaptureFixture[str], **config: object) -> dict[str, object]:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"home": str(tmp_path / "home"), **config}))
    await handle(argparse.Namespace(config=str(path), json=True))
    rows = {row["check"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}
    return rows["store"]


async def test_doctor_names_the_mode_and_checks_postgres(tmp_path: Path, database: str, redis_url: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite by default; PostgreSQL reachable, its pending migrations named, then migrated; a newer schema fails."""
    sqlite = await _store_row(tmp_path, capsys)
    assert sqlite["ok"] and str(sqlite["detail"]).startswith("sqlite under home (one machine)")
    fresh = await _store_row(tmp_path, capsys, store={"url": database}, redis={"url": redis_url})
    assert fresh["ok"] and f"{SCHEMA_VERSION} migration(s) will run at start" in str(fresh["detail"])
    with PostgresSessionStore(database):
        pass
    capsys.readouterr()  # the migration's log line
    migrated = await _store_row(tmp_path, capsys, store={"url": database}, redis={"url": redis_url})
    assert migrated["ok"] and "reachable, migrated" in str(migrated["detail"]) and "writable" in str(migrated["detail"])
    alone = await _store_row(tmp_path, capsys, store={"url": database})
    assert alone["ok"] and "run one replica only" in str(alone["detail"])
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("UPDATE chorus_schema SET version = version + 1")
    newer = await _store_row(tmp_path, capsys, store={"url": database})
    assert not newer["ok"] and "newer than this Chorus" in str(newer["detail"]) and newer["fix"]


async def test_doctor_reports_an_unreachable_store_without_its_password(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    row = await _store_row(tmp_path, capsys, store={"url": "postgresql://chorus:pw-secret@127.0.0.1:1/chorus"})
    assert not row["ok"] and "cannot use postgresql://chorus:***@127.0.0.1:1/chorus" in str(row["detail"])
    assert "pw-secret" not in json.dumps(row)


async def test_readyz_fails_while_the_store_is_unreachable(fake_openai: FakeOpenAI, home: Path, database: str) -> None:
    """Connections cut by the server: not ready, an error counted in /metrics; ready again once it answers."""
    config = make_config(home, fake_openai.base_url, store={"url": database})
    async with started(config) as gateway:
        backend, metrics = GatewayBackend(gateway, events=EventLog(), config=config), Metrics()
        assert (await gateway.ping_store()).ok and (await gateway.readiness()).ready
        name = database.rsplit("/", 1)[1]
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            # Refuse new connections and cut the pool's: what a failover or a stopped server looks like.
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        try:
            assert not (await gateway.ping_store()).ok
            report = await gateway.readiness()
            assert (report.ready, report.store_open, report.detail) == (
                False, False, "the session store did not answer its last ping"
            )
            backend.refresh_metrics(metrics)
            text = metrics.render().decode()
            assert "chorus_store_up 0.0" in text and "chorus_store_errors_total 1.0" in text
        finally:
            with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert (await gateway.ping_store()).ok and (await gateway.readiness()).ready
        backend.refresh_metrics(metrics)
        assert "chorus_store_up 1.0" in metrics.render().decode()


def test_chorus_run_with_an_unreachable_store_exits_with_one_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """No server at store.url: `chorus run` exits 1 naming the store and the fix, password hidden, no traceback."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "home": str(tmp_path / "home"),
        "model": {"name": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test"},
        "platforms": {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
        "admin": {"host": "127.0.0.1", "port": 0},
        "store": {"url": "postgresql://chorus:pw-secret@127.0.0.1:1/chorus"},
    }))
    try:
        assert main(["run", "--config", str(path)]) == 1
    finally:
        structlog.reset_defaults()  # the CLI pointed logging at the captured stderr
    err = capsys.readouterr().err
    assert "chorus run: cannot reach the PostgreSQL store postgresql://chorus:***@127.0.0.1:1/chorus" in err
    assert "pw-secret" not in err and "Traceback" not in err
