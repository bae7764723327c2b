"""Must-show: through `chorus run` itself, a poison websocket frame and a poison Telegram webhook stop no chat."""
from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp
import yaml

from adapters.telegram import SECRET_HEADER
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram, message, private_chat
from tests.gateway.daemon import start_daemon
from tests.gateway.harness import chat
from tests.gateway.replicas import admin_port, logged_port, web_port

SECRET = "daemon-poison-secret"


def _config(path: Path, home: Path, openai: str, telegram: str) -> None:
    """Every server on port 0: the daemon binds a free one and logs it (a port picked here could be taken)."""
    config = {
        "home": str(home),
        "model": {"name": "fake-model", "base_url": openai, "api_key": "sk-test-not-real"},
        "platforms": {
            "web": {"enabled": True, "host": "127.0.0.1", "port": 0},
            "telegram": {
                "enabled": True, "token": "123456:fake-token-for-tests", "base_url": telegram, "mode": "webhook",
                "allow_all_users": True,
                "webhook": {"url": "https://bot.example.org/tg", "secret_token": SECRET, "path": "/tg",
                            "listen": "127.0.0.1", "port": 0},
            },
        },
        "admin": {"host": "127.0.0.1", "port": 0},
        "gateway": {"shutdown_grace_seconds": 1},
        "memory": {"nudge_interval": 0, "flush_min_turns": 0},
        "logging": {"format": "json", "level": "info"},
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


async def test_poison_frame_and_webhook_leave_every_chat_answered(fake_openai: FakeOpenAI, home: Path, tmp_path: Path) -> None:
    """A lone surrogate by websocket and by Telegram webhook: both answered, a third chat too, /readyz stays 200."""
    async with FakeTelegram(token="123456:fake-token-for-tests") as telegram:
        config = tmp_path / "config.yaml"
        _config(config, home, fake_openai.base_url, f"http://127.0.0.1:{telegram.port}")
        process, log_lines = await start_daemon(config)
        ports = {"web": web_port(log_lines), "telegram": logged_port(log_lines, "telegram.started"),
                 "admin": admin_port(log_lines)}
        try:
            async with chat(ports["web"]) as tab:
                await tab.ws.send_str('{"type": "message", "text": "cut \\ud83d emoji", "client_id": "p1"}')
                assert await tab.reply(timeout=30) == "echo: cut \ufffd emoji"
            body = json.dumps({"update_id": 501, "message": message(private_chat(777), "tg \ud83d cut")}).encode()
            assert b"\\ud83d" in body
            headers = {"Content-Type": "application/json", SECRET_HEADER: SECRET}
            async with aiohttp.ClientSession() as http:
                async with http.post(f"http://127.0.0.1:{ports['telegram']}/tg", data=body, headers=headers) as response:
                    assert response.status == 200
                sent = await telegram.wait_for_calls("sendMessage", timeout=30)
                async with chat(ports["web"]) as other:
                    await other.say("another chat")
                    assert await other.reply(timeout=30) == "echo: another chat"
                async with http.get(f"http://127.0.0.1:{ports['admin']}/readyz") as response:
                    ready = (response.status, await response.json())
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 30) == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert sent[0].params["text"] == "echo: tg \ufffd cut"
    assert ready == (200, {"status": "ready", "store_open": True, "coordinator": True, "adapters_started": True,
                           "background_tasks": True, "detail": "", "coordination": "embedded"})
    assert [line for line in log_lines if line.get("level") == "error"] == []
    assert list((home / "inflight").glob("*/*.json")) == []
