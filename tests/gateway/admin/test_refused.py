"""People refused by the allowlist: recorded from real Telegram messages (never their text), listed on any
replica through Redis, bounded, and admitted with one call that reaches every replica and the config file."""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from gateway.admin.refused import MemoryRefused, RedisRefused, RefusedRecorder, RefusedStore
from gateway.admin.shared_records import RedisHandle
from gateway.config import load_config
from gateway.ops.events import SenderRefused
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import TOKEN as TELEGRAM_TOKEN
from tests.fakes.telegram_api import FakeTelegram, message, private_chat, user
from tests.gateway.admin.helpers import Admin, admin_gateway, commented_config
from tests.gateway.coord.conftest import eventually

STRANGER = 4242
SECRET_TEXT = "my card number is 1234"


def replica_file(tmp_path: Path, name: str, base_url: str, *, telegram_port: int | None, redis: str = "") -> Path:
    """One replica's commented config file (the same allowlist on each); Telegram on when `telegram_port` is given."""
    connect = (f"    enabled: true\n    token: \"{TELEGRAM_TOKEN}\"\n    base_url: http://127.0.0.1:{telegram_port}\n"
               if telegram_port else "    enabled: false\n")
    return commented_config(tmp_path / name, base_url, telegram=connect, extra=redis)


async def _listed(admin: Admin) -> list[dict[str, Any]]:
    status, body = await admin.get("/api/refused")
    assert status == 200
    rows: list[dict[str, Any]] = body["refused"]
    return rows


async def _until(check: Callable[[], Any], timeout: float = 20.0) -> None:
    async def met() -> bool:
        return bool(await check())
    assert await eventually(met, timeout=timeout)


async def test_a_refused_sender_is_listed_and_admitted(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Two refused messages make one row (name, chat, count 2, no text); admit adds the id live and to the file
    (comments kept), the row goes, and their next message is answered."""
    async with FakeTelegram() as tg:
        path = replica_file(tmp_path, "a", fake_openai.base_url, telegram_port=tg.port)
        async with admin_gateway(load_config(path), path=path) as admin:
            for text in (SECRET_TEXT, "hello?"):
                await tg.push_update(message=message(private_chat(STRANGER), text, sender=user(STRANGER, "Mallory", "mal")))
            await tg.wait_for_text(STRANGER, "not allowed")
            await _until(lambda: _count_is(admin, 2))
            rows = await _listed(admin)
            status, admitted = await admin.send("POST", "/api/refused/admit", {"platform": "telegram", "user_id": str(STRANGER)})
            after = await _listed(admin)
            await tg.push_update(message=message(private_chat(STRANGER), "now?", sender=user(STRANGER, "Mallory", "mal")))
            answer = await tg.wait_for_text(STRANGER, "now?")
    (row,) = rows
    assert {k: row[k] for k in ("platform", "user_id", "name", "chat", "count")} == {
        "platform": "telegram", "user_id": str(STRANGER), "name": "Mallory", "chat": str(STRANGER), "count": 2}
    assert SECRET_TEXT not in str(rows)
    assert status == 200 and admitted["allowed_users"] == ["1", str(STRANGER)] and admitted["persisted"] is True
    assert after == [] and "now?" in answer
    text = path.read_text(encoding="utf-8")
    assert f"    allowed_users: [\"1\", \"{STRANGER}\"] # ops\n" in text and "  telegram:   # the team bot\n" in text


async def _count_is(admin: Admin, count: int) -> bool:
    rows = await _listed(admin)
    return bool(rows) and rows[0]["count"] == count


async def test_admit_names_what_is_wrong(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """No body, a platform without an allowlist, a limit that is no number: 400 saying what to send."""
    path = replica_file(tmp_path, "a", fake_openai.base_url, telegram_port=None)
    async with admin_gateway(load_config(path), path=path) as admin:
        empty = await admin.send("POST", "/api/refused/admit", {})
        web = await admin.send("POST", "/api/refused/admit", {"platform": "web", "user_id": "x"})
        bad_limit = await admin.get("/api/refused?limit=all")
        bad_audit_limit = await admin.get("/api/config/audit?limit=-x")
    assert empty[0] == 400 and "platform" in empty[1]["error"]
    assert bad_limit == (400, {"error": "limit: got 'all'; expected a whole number up to 1000"})
    assert bad_audit_limit == (400, {"error": "limit: got '-x'; expected a whole number up to 500"})
    assert web[0] == 400 and web[1]["error"] == "web: this platform has no allowed_users to admit a sender to"


@asynccontextmanager
async def _redis_refused(redis_url: str, prefix: str, capacity: int, clock: Callable[[], float]) -> AsyncIterator[RefusedStore]:
    handle = RedisHandle(redis_url)
    try:
        yield RedisRefused(handle, prefix, capacity=capacity, clock=clock)
    finally:
        raw = aioredis.Redis.from_url(redis_url)
        await raw.delete(f"{prefix}:refused", f"{prefix}:refused:count", f"{prefix}:refused:seen")
        await raw.aclose()
        await handle.close()


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_flood_of_strangers_keeps_only_the_newest(backend: str, redis_url: str, redis_prefix: str) -> None:
    """Beyond the cap the least recently seen are dropped; one seen again moves up and keeps its count."""
    clock = iter(range(1_000, 2_000))

    def now() -> float:
        return 2_000.0

    async with AsyncExitStack() as stack:
        store: RefusedStore = MemoryRefused(capacity=3, clock=now) if backend == "memory" else await stack.enter_async_context(
            _redis_refused(redis_url, redis_prefix, 3, now))
        record = RefusedRecorder(store, clock=lambda: float(next(clock)))
        for user_id in ("1", "2", "3", "1", "4", "5"):
            record(SenderRefused("telegram", user_id, f"user {user_id}", "-100"))
            if isinstance(store, RedisRefused):
                await store.writes.drain()  # each write lands before the next, as separate messages would
        rows = await store.recent(10)
    assert [(row.user_id, row.count) for row in rows] == [("5", 1), ("4", 1), ("1", 2)]


async def test_two_replicas_share_the_list_and_the_audit(
    fake_openai: FakeOpenAI, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    """Refused on A (Telegram), listed and admitted on B (no Telegram): A answers them next, and the audit on A
    shows B's change once, by the admin token."""
    redis = f"redis:\n  url: {redis_url}\n  key_prefix: {redis_prefix}\n"
    async with FakeTelegram() as tg:
        path_a = replica_file(tmp_path, "a", fake_openai.base_url, telegram_port=tg.port, redis=redis)
        path_b = replica_file(tmp_path, "b", fake_openai.base_url, telegram_port=None, redis=redis)
        async with admin_gateway(load_config(path_a), path=path_a) as a, admin_gateway(load_config(path_b), path=path_b) as b:
            await tg.push_update(message=message(private_chat(STRANGER), SECRET_TEXT, sender=user(STRANGER, "Mallory")))
            await tg.wait_for_text(STRANGER, "not allowed")
            await _until(lambda: _listed(b))
            rows = await _listed(b)
            status, admitted = await b.send("POST", "/api/refused/admit", {"platform": "telegram", "user_id": str(STRANGER)})
            await _until(lambda: _allowed_on(a, str(STRANGER)))
            await tg.push_update(message=message(private_chat(STRANGER), "again", sender=user(STRANGER, "Mallory")))
            answer = await tg.wait_for_text(STRANGER, "again")
            on_a = await _listed(a)
            await _until(lambda: _audited(a, "platforms.telegram.allowed_users"))
            _, audit = await a.get("/api/config/audit")
    assert [(row["user_id"], row["name"]) for row in rows] == [(str(STRANGER), "Mallory")]
    assert status == 200 and admitted["replicas"] == "told"
    assert "again" in answer and on_a == []
    entries = [e for e in audit["entries"] if e["key"] == "platforms.telegram.allowed_users"]
    assert audit["scope"] == "every replica"
    assert [(e["who"], e["old"], e["new"]) for e in entries] == [("admin token", ["1"], ["1", str(STRANGER)])]


async def _audited(admin: Admin, key: str) -> bool:
    """The shared audit list has an entry for `key` (B pushes it as a background write)."""
    _, audit = await admin.get("/api/config/audit")
    return any(entry["key"] == key for entry in audit["entries"])


async def _allowed_on(admin: Admin, user_id: str) -> bool:
    telegram = admin.ops.live.current().platforms.telegram
    return user_id in telegram.allowed_users
