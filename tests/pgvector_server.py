"""A PostgreSQL server with pgvector for the semantic-recall tests, started and stopped by the tests themselves.

Debian 12 ships no pgvector for its PostgreSQL 15 (the one on 127.0.0.1:5432), so these tests run PostgreSQL 16
with pgvector from the `pgserver` wheel (a test dependency that carries both, built for manylinux). The server
listens only on a Unix socket in a fresh temporary directory, so there is no port to race for; PostgreSQL
refuses to run as root, so under root it runs as the `postgres` user, from a copy of the binaries inside that
directory (the checkout may sit where that user cannot read).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.postgres import fresh_database

POSTGRES_USER = "postgres"  # the system user the server runs as under root (Debian's postgresql package makes it)


def _installed() -> Path:
    """The site-packages directory holding `pgserver/pginstall` and the libraries it links (`pgserver.libs`)."""
    spec = importlib.util.find_spec("pgserver")
    assert spec is not None and spec.submodule_search_locations, "pgserver is a test dependency (pyproject [test])"
    return Path(next(iter(spec.submodule_search_locations))).parent


@contextmanager
def pgvector_server() -> Iterator[str]:
    """The admin URL of a running PostgreSQL with pgvector available; the server and its files go on exit."""
    base = Path(tempfile.mkdtemp(prefix="chorus-pgv-"))
    site = base / "site"
    shutil.copytree(_installed() / "pgserver" / "pginstall", site / "pgserver" / "pginstall")
    shutil.copytree(_installed() / "pgserver.libs", site / "pgserver.libs")
    run_as: list[str] = []
    if os.geteuid() == 0:
        run_as = ["runuser", "-u", POSTGRES_USER, "--"]
        for path in (base, *base.rglob("*")):
            shutil.chown(path, POSTGRES_USER)
    binaries, data = site / "pgserver" / "pginstall" / "bin", base / "data"

    def pg(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([*run_as, *args], capture_output=True, timeout=120)

    made = pg(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    assert made.returncode == 0, made.stderr.decode(errors="replace")
    started = pg(str(binaries / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w", "start",
                 "-o", f"-k {base} -c listen_addresses=''")
    assert started.returncode == 0, (base / "server.log").read_text(errors="replace") if (base / "server.log").exists() else ""
    try:
        yield f"postgresql://postgres@/postgres?host={base}"
    finally:
        pg(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """One database on a pgvector server for the test session (import this fixture where it is used)."""
    with pgvector_server() as admin_url, fresh_database(admin_url=admin_url) as url:
        yield url
