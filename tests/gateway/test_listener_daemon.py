"""`chorus run` under idle-connection floods: health and a web chat still answer; idle sockets are closed.

The daemon runs with the descriptor limit the shipped systemd unit sets
(`LimitNOFILE`, or systemd's default soft limit of 1,024 when the unit sets
none), capped at this machine's hard limit.
"""
from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.daemon import start_daemon, stop_daemon
from tests.gateway.harness import chat

ROOT = Path(__file__).resolve().parents[2]
SYSTEMD_DEFAULT_NOFILE = 1024
IDLE_CONNECTIONS = 3000
EOF_WAIT_SECONDS = 30.0


def unit_nofile() -> int:
    """What the shipped unit gives the daemon (systemd's default soft limit when it says nothing)."""
    unit = (ROOT / "deploy" / "chorus.service").read_text(encoding="utf-8")
    values = [int(line.split("=", 1)[1]) for line in unit.splitlines() if line.startswith("LimitNOFILE=")]
    return values[-1] if values else SYSTEMD_DEFAULT_NOFILE


@contextlib.contextmanager
def raised_nofile() -> Iterator[int]:
    """This test process's soft descriptor limit raised to its hard limit (restored after); yields it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        yield hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def write_config(path: Path, home: Path, base_url: str, **gateway: Any) -> None:
    config = {
        "home": str(home),
        "model": {"name": "fake-model", "base_url": base_url, "api_key": "sk-test-not-real", "context_length": 128000},
        "platforms": {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
        "admin": {"host": "127.0.0.1", "port": 0},
        "gateway": {"shutdown_grace_seconds": 2, **gateway},
        "memory": {"nudge_interval": 0, "flush_min_turns": 0},
        "logging": {"format": "json"},
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


def port_of(lines: list[dict[str, Any]], event: str) -> int:
    (line,) = [entry for entry in lines if entry.get("event") == event]
    return int(str(line["url"]).rsplit(":", 1)[1].split("/", 1)[0])


def idle_sockets(port: int, count: int) -> list[socket.socket]:
    """`count` connected TCP sockets that never send a byte."""
    opened = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        opened.append(sock)
    return opened


async def test_health_and_a_chat_answer_under_3000_idle_connections(tmp_path: Path) -> None:
    """3,000 idle connections (half on the admin port, half on the web chat's) under the unit's descriptor limit."""
    async with FakeOpenAI() as fake:
        fake.push(Reply(content="still here"))
        config = tmp_path / "config.yaml"
        write_config(config, tmp_path / "home", fake.base_url)
        with raised_nofile() as hard:
            count = min(IDLE_CONNECTIONS, hard - 200)  # the test's own sockets need descriptors too
            process, lines = await start_daemon(config, nofile=min(unit_nofile(), hard))
            held: list[socket.socket] = []
            try:
                admin_port, web_port = port_of(lines, "admin.started"), port_of(lines, "web.started")
                held += await asyncio.to_thread(idle_sockets, admin_port, count // 2)
                held += await asyncio.to_thread(idle_sockets, web_port, count - count // 2)
                async with aiohttp.ClientSession() as http, http.get(
                    f"http://127.0.0.1:{admin_port}/healthz"
                ) as response:
                    assert response.status == 200
                async with chat(web_port) as client:
                    await client.say("are you there?")
                    assert await client.reply() == "still here"
            finally:
                for sock in held:
                    sock.close()
                await stop_daemon(process)
    assert not [line for line in lines if "Traceback" in str(line) or line.get("event") == "listener.accept_failed"]


@pytest.mark.parametrize("port_event", ["admin.started", "web.started"])
async def test_an_idle_connection_to_the_daemon_is_closed_after_read_timeout(tmp_path: Path, port_event: str) -> None:
    """gateway.read_timeout_seconds: 1: a connection that sends nothing gets EOF from the daemon."""
    async with FakeOpenAI() as fake:
        config = tmp_path / "config.yaml"
        write_config(config, tmp_path / "home", fake.base_url, read_timeout_seconds=1)
        process, lines = await start_daemon(config)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port_of(lines, port_event))
            assert await asyncio.wait_for(reader.read(), EOF_WAIT_SECONDS) == b""
            writer.close()
        finally:
            await stop_daemon(process)
