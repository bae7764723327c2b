"""A full disk loses no accepted message (issue 30, item 2).

Built as `chorus run` builds it, on a real SQLite store made "full" the way a full disk makes it: the store's
`max_page_count` is lowered to its size and the free pages are used up, so every turn's write fails with a real
SQLITE_FULL ("database or disk is full"). Messages accepted meanwhile stay journaled, their chats are told once
that the reply is delayed, `/readyz` is red naming the disk with the real error; once there is room again,
every one of them is answered once and stored once, and `/readyz` is green.
"""
from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent.store import SqliteSessionStore
from gateway.coord.base import OutboundItem
from gateway.coord.memory import MemoryOutbox
from gateway.delivery.outbox_file import JournaledOutbox
from gateway.i18n import say
from gateway.sessions.store_writes import storage_failure
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus, serving_readyz, until

WAIT = 60.0
CHATS = ("c1", "c2", "c3")
LONG = "please keep this whole note: " + "the quarterly numbers look fine " * 120  # needs overflow pages


def _connection(store: object) -> sqlite3.Connection:
    assert isinstance(store, SqliteSessionStore)
    conn = store._conn  # the store's own connection: max_page_count is a per-connection limit
    assert conn is not None
    return conn


def fill_the_disk(store: object) -> None:
    """No page left: the file may not grow and its free pages are used up (what a full disk does to SQLite)."""
    assert isinstance(store, SqliteSessionStore)
    with store._lock:
        conn = _connection(store)
        conn.execute("CREATE TABLE IF NOT EXISTS test_filler (blob BLOB)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        for size in (4000, 500, 50):
            while True:
                try:
                    conn.execute("INSERT INTO test_filler VALUES (randomblob(?))", (size,))
                except sqlite3.OperationalError as exc:
                    assert exc.sqlite_errorcode == sqlite3.SQLITE_FULL, exc
                    break


def free_the_disk(store: object) -> None:
    assert isinstance(store, SqliteSessionStore)
    with store._lock:
        _connection(store).execute("PRAGMA max_page_count = 1073741823")


async def _status(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, Any]]:
    async with http.get(url) as response:
        return response.status, await response.json()


async def test_messages_accepted_while_the_disk_is_full_are_answered_once_when_it_has_room(
    fake_openai: FakeOpenAI, home: Path,
) -> None:
    chat = FakePlatform("telegram")
    platforms = {"web": {"enabled": False}, "telegram": {"allow_all_users": True}}
    config = make_config(home, fake_openai.base_url, platforms=platforms)
    async with run_like_chorus(config, adapters={"telegram": chat}) as (gateway, _ops), serving_readyz(gateway) as url, \
            aiohttp.ClientSession() as http:
        await chat.inject("warm up", chat_id="c0")
        await chat.wait_text("echo: warm up", timeout=WAIT)
        fill_the_disk(gateway.parts.store)
        for chat_id in CHATS:
            await chat.inject(f"{chat_id}: {LONG}", chat_id=chat_id)
        await chat.wait_for(1 + len(CHATS), timeout=WAIT)  # each chat told once that its reply is delayed
        red = await until(lambda: _red(http, url))
        free_the_disk(gateway.parts.store)
        for chat_id in CHATS:
            await chat.wait_text(f"echo: {chat_id}: {LONG}", timeout=WAIT)
        green = await until(lambda: _green(http, url))
        store = gateway.parts.store
        stored = {}
        for chat_id in CHATS:
            session = store.active_session(f"agent:default:telegram:dm:{chat_id}")
            assert session is not None
            stored[chat_id] = [m.text for m in store.active_messages(session.id)]
    by_chat = {chat_id: [o.text for o in chat.outgoing if o.chat_id == chat_id] for chat_id in CHATS}
    for chat_id in CHATS:
        assert by_chat[chat_id] == [say("en", "turn.delayed"), f"echo: {chat_id}: {LONG}"], by_chat[chat_id]
        assert stored[chat_id] == [f"{chat_id}: {LONG}", f"echo: {chat_id}: {LONG}"]
    assert not any(say("en", "turn.failed") in o.text for o in chat.outgoing)
    status, body = red
    assert status == 503 and body["store_open"] is False
    assert "database or disk is full" in body["detail"] and str(home) in body["detail"], body
    assert green[0] == 200


async def _red(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, Any]] | None:
    status, body = await _status(http, url)
    return (status, body) if status == 503 else None


async def _green(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, Any]] | None:
    status, body = await _status(http, url)
    return (status, body) if status == 200 else None


async def test_a_reply_whose_outbox_line_cannot_be_written_is_not_left_pending() -> None:
    """`/dev/full` answers every write with ENOSPC: the reply is not recorded (the turn runs again, once), and
    the error is one a full disk makes."""
    outbox = JournaledOutbox(MemoryOutbox(), Path("/dev/full"))
    item = OutboundItem(platform="telegram", chat_id="c1", thread_id=None, text="hello", session_key="k")
    with pytest.raises(OSError) as raised:
        await outbox.put(item)
    outbox.close()
    assert raised.value.errno == errno.ENOSPC and storage_failure(raised.value) is raised.value
    assert await outbox.pending() == []
