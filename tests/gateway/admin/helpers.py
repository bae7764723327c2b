"""Shared parts of the admin tests: a real gateway with the admin app on a free port, and seeding."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from agent.messages import Message, assistant, user
from agent.store import STATE_DB_NAME, SqliteSessionStore
from gateway.admin import Operations, serve_admin
from gateway.app import Gateway
from gateway.config import ChorusConfig
from gateway.intake.routing import chat_scope, session_key
from tests.gateway.harness import make_config, started

TOKEN = "test-admin-token-0123456789"


def web_key(chat: str) -> str:
    """The session key of a web DM chat."""
    return session_key(profile="default", platform="web", kind="dm", chat_id=chat, thread_id=None, user_id=None)


def seed(home: Path, chat: str, count: int, *, words: int = 6) -> str:
    """Write a web chat's session with `count` alternating messages into the store; returns its key."""
    key = web_key(chat)
    store = SqliteSessionStore(home / STATE_DB_NAME)
    store.open()
    try:
        session = store.ensure_session(key, platform="web", chat_id=chat_scope("web", chat))
        filler = " ".join(["context"] * words)
        messages: list[Message] = []
        for i in range(count // 2):
            messages.append(user(f"question {i} about the rollout {filler}"))
            messages.append(assistant(f"answer {i}: the rollout step {i} is done {filler}"))
        store.append(session.id, messages)
    finally:
        store.close()
    return key


@dataclass
class Admin:
    """A running gateway, its operations object and the admin server's base URL."""

    gateway: Gateway
    ops: Operations
    url: str
    http: aiohttp.ClientSession

    def headers(self, token: str = TOKEN) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    async def get(self, path: str, **kwargs: Any) -> tuple[int, Any]:
        async with self.http.get(self.url + path, headers=self.headers(), **kwargs) as resp:
            return resp.status, await resp.json()

    async def send(self, method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        async with self.http.request(method, self.url + path, json=body, headers=self.headers(), **kwargs) as resp:
            return resp.status, await resp.json()


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` on a free loopback port (as `chorus run` would); yields its base URL."""
    runner, port = await serve_admin(app, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def admin_gateway(
    config: ChorusConfig, *, path: Path | None = None, token: str | None = TOKEN, tap_logs: bool = True
) -> AsyncIterator[Admin]:
    """A real gateway built with the live engine, plus its admin app served on loopback."""
    ops = Operations.create(config, path=path)
    async with started(config, engine=ops.engine()) as gateway:
        app = ops.attach(gateway, token=token, tap_logs=tap_logs)
        try:
            async with serve_app(app) as url, aiohttp.ClientSession() as http:
                yield Admin(gateway, ops, url, http)
        finally:
            ops.detach()


def commented_config(folder: Path, base_url: str, *, telegram: str = "", extra: str = "", token: str = TOKEN) -> Path:
    """`folder/config.yaml` as an operator keeps one, with comments on the lines the tests edit.

    `telegram`: lines under `platforms.telegram` before its `allowed_users: ['1']`; `extra`: sections appended.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(
        f"# the team's bot\nhome: {folder / 'home'}\nmodel:\n  name: fake-model\n  base_url: {base_url}\n"
        "  api_key: sk-test-not-real\nmemory:\n  nudge_interval: 0\n  flush_min_turns: 0\n"
        "compression:\n  threshold: 0.5   # half the window\n"
        "gateway:\n  shutdown_grace_seconds: 1\n  usage_footer: \"off\"   # a line under each reply\n"
        f"platforms:\n  web:\n    enabled: false\n  telegram:   # the team bot\n{telegram}    allowed_users: ['1']   # ops\n"
        f"admin:\n  host: 127.0.0.1\n  port: 0\n  token: {token}\n{extra}",
        encoding="utf-8",
    )
    return path


def config_for(home: Path, base_url: str, **sections: Any) -> ChorusConfig:
    return make_config(home, base_url, **sections)
