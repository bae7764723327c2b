"""The dashboard's config editor, audit log and people-refused list, driven in headless Chromium against a real
`chorus run` (and the fake Telegram). The screenshots go to the test's temporary directory, or to
`$CHORUS_SCREENSHOTS` when set (`CHORUS_SCREENSHOTS=docs/images` refreshes the ones in the docs)."""
from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.adapters.web.browser import Page, open_page
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import TOKEN as TELEGRAM_TOKEN
from tests.fakes.telegram_api import FakeTelegram, message, private_chat, user
from tests.gateway.admin.helpers import commented_config
from tests.gateway.replicas import ROOT, admin_port, replica

ADMIN_TOKEN = "dashboard-admin-token-for-tests"
NEW_SECRET = "777:a-new-bot-token-typed-in-the-page"
STRANGER = 5150


def shot(tmp_path: Path, name: str, png: bytes) -> None:
    """Keep a screenshot (in `$CHORUS_SCREENSHOTS`, relative to the repository, else beside the test's files)."""
    chosen = os.environ.get("CHORUS_SCREENSHOTS")
    folder = ROOT / chosen if chosen else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    assert png.startswith(b"\x89PNG")
    (folder / name).write_bytes(png)


def config_file(tmp_path: Path, base_url: str, telegram_port: int) -> Path:
    """A commented config file: Telegram on (the fake), one admitted user, JSON logs for the test to read."""
    connect = f"    enabled: true\n    token: \"{TELEGRAM_TOKEN}\"\n    base_url: http://127.0.0.1:{telegram_port}\n"
    return commented_config(tmp_path, base_url, telegram=connect, token=ADMIN_TOKEN,
                            extra="logging:\n  format: json\n  level: info\n")


@asynccontextmanager
async def dashboard(tmp_path: Path, fake_openai: FakeOpenAI, tg: FakeTelegram) -> AsyncIterator[tuple[Page, int, Path]]:
    """`chorus run` on a commented config file and its dashboard open at desktop size, signed in."""
    path = config_file(tmp_path, fake_openai.base_url, tg.port)
    async with replica(path) as lines:
        port = admin_port(lines)
        url = f"http://127.0.0.1:{port}/dashboard"
        async with open_page(url + f"#token={ADMIN_TOKEN}", tmp_path / "profile") as page:
            await page.resize(1280, 1000, mobile=False)
            await page.until("document.body.dataset.configReady === 'true'")
            yield page, port, path


async def _api(port: int, path: str) -> Any:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as http:
        async with http.get(f"http://127.0.0.1:{port}{path}") as response:
            return await response.json()


def _row(key: str) -> str:
    return f"document.querySelector('.cfg-row[data-key=\"{key}\"]')"


async def _filter(page: Page, text: str) -> None:
    await page.evaluate("(() => { const f = document.getElementById('config-filter'); f.value = ''; f.focus(); })()")
    await page.insert_text(text)


async def _type_and_save(page: Page, key: str, text: str) -> None:
    """Clear the key's field, type `text` as a person would and press its Save button."""
    await page.until(f"!!{_row(key)}")
    await page.evaluate(f"(() => {{ const c = {_row(key)}.querySelector('input, textarea'); c.value = ''; c.focus(); }})()")
    await page.insert_text(text)
    await page.evaluate(f"{_row(key)}.querySelector('button.cfg-save').click()")


async def test_the_editor_checks_saves_and_audits_each_change(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A typo'd value shows the server's "did you mean" by its field; the right one applies and is saved with the
    file's comments; a secret typed in is saved, never shown again, and the audit lists both changes."""
    async with FakeTelegram() as tg, dashboard(tmp_path, fake_openai, tg) as (page, port, path):
        await _filter(page, "usage_footer")
        await _type_and_save(page, "gateway.usage_footer", "cots")
        error = await page.until(f"{_row('gateway.usage_footer')}.querySelector('.cfg-error').textContent")
        await _type_and_save(page, "gateway.usage_footer", "cost")
        saved = await page.until(f"{_row('gateway.usage_footer')}.querySelector('.cfg-done').textContent")
        await _filter(page, "telegram.token")
        await _type_and_save(page, "platforms.telegram.token", NEW_SECRET)
        secret_saved = await page.until(f"{_row('platforms.telegram.token')}.querySelector('.cfg-done').textContent")
        audited = await page.until("document.querySelector('#audit tr[data-key=\"platforms.telegram.token\"]')"
                                   " && document.getElementById('audit').innerText")
        field = await page.evaluate(f"{_row('platforms.telegram.token')}.querySelector('input').value")
        whole_page = await page.evaluate("document.documentElement.outerHTML")
        values = (await _api(port, "/api/config"))["values"]
        await _filter(page, "usage_footer")
        await _type_and_save(page, "gateway.usage_footer", "tokns")
        await page.until(f"{_row('gateway.usage_footer')}.querySelector('.cfg-error').textContent")
        await page.evaluate("document.getElementById('config-section').scrollIntoView()")
        shot(tmp_path, "dashboard-config.png", await page.screenshot())
    text = path.read_text(encoding="utf-8")
    assert error == ("change: gateway.usage_footer: got 'cots'; Input should be 'off', 'tokens' or 'cost'; "
                     "did you mean cost?")
    assert saved.startswith(f"saved to {path}") and values["gateway.usage_footer"] == "cost"
    assert "  usage_footer: \"cost\"  # a line under each reply\n" in text and "# the team's bot" in text
    assert secret_saved == f"saved to {path}, in force now"  # a token is live: its adapter restarts
    assert f"    token: \"{NEW_SECRET}\"\n" in text
    assert field == "" and NEW_SECRET not in whole_page and TELEGRAM_TOKEN not in whole_page
    assert "platforms.telegram.token" in audited and "<hidden>" in audited and "admin token" in audited
    assert "gateway.usage_footer" in audited and "cost" in audited


async def test_a_refused_telegram_sender_is_admitted_with_one_click(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A stranger's message is refused and listed (name, id, chat; never the text); Admit removes the row, adds
    them to allowed_users in the file, and their next message is answered."""
    async with FakeTelegram() as tg, dashboard(tmp_path, fake_openai, tg) as (page, port, path):
        await tg.push_update(message=message(private_chat(STRANGER), "let me in, my pin is 4321",
                                             sender=user(STRANGER, "Grace", "grace")))
        await tg.wait_for_text(STRANGER, "not allowed", timeout=30)
        row = f"document.querySelector('#refused tr[data-refused=\"telegram:{STRANGER}\"]')"
        listed = await page.until(f"{row} && {row}.innerText")
        whole_page = await page.evaluate("document.documentElement.outerHTML")
        await page.evaluate("document.getElementById('refused-section').scrollIntoView()")
        shot(tmp_path, "dashboard-refused.png", await page.screenshot())
        await page.evaluate(f"{row}.querySelector('button.admit').click()")
        await page.until(f"!{row} && !document.getElementById('refused-empty').hidden")
        await tg.push_update(message=message(private_chat(STRANGER), "hello again", sender=user(STRANGER, "Grace", "grace")))
        answer = await tg.wait_for_text(STRANGER, "hello again", timeout=30)
        refused = await _api(port, "/api/refused")
    assert f"{STRANGER}" in listed and "Grace" in listed and "telegram" in listed
    assert "4321" not in whole_page
    assert "hello again" in answer and refused == {"refused": []}
    assert f"    allowed_users: [\"1\", \"{STRANGER}\"] # ops\n" in path.read_text(encoding="utf-8")
