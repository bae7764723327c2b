"""`platforms.web.auth` as `chorus run` builds it: a token off loopback, `auth: none` only when written."""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from structlog.testing import capture_logs

from chorus_errors import ConfigError
from gateway.cli.run import warn_at_start
from gateway.config import parse_config
from gateway.doctor.checks import check_web
from gateway.platforms.web_login import WEB_TOKEN_FILE, resolve_web_login, web_announcement
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.harness import make_config, web_port
from tests.gateway.run_harness import run_like_chorus


def _web(home: Path, **web: Any) -> Any:
    return parse_config({"home": str(home), "platforms": {"web": {"port": 0, **web}}}, env={})


async def _status(url: str, headers: dict[str, str]) -> int:
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers=headers) as ws:
                await ws.receive_json()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


async def test_web_chat_on_all_interfaces_needs_the_generated_token(fake_openai: FakeOpenAI, home: Path) -> None:
    """host 0.0.0.0 with no auth keys: a token is generated (0600 under home); without it no chat, with it a reply."""
    config = make_config(home, fake_openai.base_url, platforms={"web": {"enabled": True, "host": "0.0.0.0", "port": 0}})
    async with run_like_chorus(config) as (gateway, _ops):
        url = f"http://127.0.0.1:{web_port(gateway)}/ws?chat=known-chat-id"
        token = (home / WEB_TOKEN_FILE).read_text().strip()
        assert await _status(url, {}) == 401
        assert await _status(url, {"Authorization": f"Bearer {token}", "Origin": "https://evil.example"}) == 403
        async with aiohttp.ClientSession() as session, session.ws_connect(
            url, headers={"Authorization": f"Bearer {token}"},
        ) as ws:
            assert (await ws.receive_json())["type"] == "hello"
            await ws.send_json({"type": "message", "text": "hi", "client_id": "m1"})
            while (frame := await ws.receive_json(timeout=10))["type"] != "message":
                continue
    assert frame["text"] == "echo: hi"
    assert stat.S_IMODE((home / WEB_TOKEN_FILE).stat().st_mode) == 0o600
    assert len(fake_openai.requests) == 1  # the refused clients never reached the model


def test_the_token_is_generated_once_then_read_back(home: Path) -> None:
    """First start generates and shows it; later starts (and replicas sharing home) read the same one."""
    config = _web(home, host="0.0.0.0")
    first, second = resolve_web_login(config.platforms.web, home), resolve_web_login(config.platforms.web, home)
    assert (first.source, second.source) == ("generated", "file")
    assert first.access.token == second.access.token and first.access.token
    url = "http://0.0.0.0:8080/"
    assert first.access.token in web_announcement(first, url)
    assert first.access.token not in web_announcement(second, url)


@pytest.mark.parametrize(("web", "required", "source"), [
    ({}, False, "none"),                                             # loopback, auto: no login
    ({"host": "0.0.0.0"}, True, "generated"),                        # any other host, auto: a token
    ({"host": "::"}, True, "generated"),
    ({"auth": "token"}, True, "generated"),                          # token asked for on loopback too
    ({"host": "0.0.0.0", "token": "chosen"}, True, "config"),
    ({"host": "0.0.0.0", "token": ""}, True, "generated"),           # ${CHORUS_WEB_TOKEN:-} unset
    ({"host": "0.0.0.0", "auth": "none"}, False, "none"),            # written explicitly: open (with a warning)
])
def test_auth_modes(home: Path, web: dict[str, Any], required: bool, source: str) -> None:
    login = resolve_web_login(_web(home, **web).platforms.web, home)
    assert (login.access.required, login.source) == (required, source)
    if source == "config":
        assert login.access.token == "chosen"


def test_a_token_that_cannot_be_saved_stops_the_start(home: Path) -> None:
    """No writable home for the token: a ConfigError naming platforms.web.auth, never an open web chat."""
    blocked = home / "a-file"
    blocked.write_text("")
    config = _web(blocked, host="0.0.0.0")
    with pytest.raises(ConfigError) as raised:
        resolve_web_login(config.platforms.web, blocked)
    assert raised.value.key == "platforms.web.auth" and "platforms.web.token" in str(raised.value)


def test_auth_none_off_loopback_is_warned_at_start_and_by_doctor(home: Path) -> None:
    exposed = _web(home, host="0.0.0.0", auth="none")
    with capture_logs() as logs:
        warn_at_start(exposed)
    assert [entry["event"] for entry in logs if entry["log_level"] == "warning"][-1] == "web.unauthenticated"
    check = check_web(exposed)
    assert check.ok and check.warning and "platforms.web.auth is none on 0.0.0.0" in check.detail
    assert "platforms.web.auth: token" in check.fix
    guarded = check_web(_web(home, host="0.0.0.0"))
    assert guarded.ok and not guarded.warning and "sign-in token required" in guarded.detail


def test_allowed_origins_must_be_origins(home: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _web(home, allowed_origins=["chat.example.com/path"])
    assert "platforms.web.allowed_origins" in str(raised.value)
    assert _web(home, allowed_origins=["https://chat.example.com"]).platforms.web.allowed_origins
