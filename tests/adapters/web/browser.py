"""A headless Chromium page driven over the DevTools protocol: evaluate JavaScript, wait for a condition, reload."""
from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.gateway.admin.dashboard_support import CHROMIUM

WAIT = 60.0


class Page:
    """One tab: `evaluate` runs an expression and returns its JSON value."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        call_id = next(self._ids)
        await self._ws.send_json({"id": call_id, "method": method, "params": params})
        while True:
            reply: dict[str, Any] = json.loads((await self._ws.receive(WAIT)).data)
            if reply.get("id") == call_id:
                return reply

    async def evaluate(self, expression: str) -> Any:
        reply = await self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return reply.get("result", {}).get("result", {}).get("value")

    async def until(self, expression: str, timeout: float = WAIT) -> Any:
        """The first truthy value of `expression`, checked every 50 ms; fails after `timeout`."""
        async def poll() -> Any:
            while not (value := await self.evaluate(expression)):
                await asyncio.sleep(0.05)  # a polling interval, not a synchronisation guess
            return value
        return await asyncio.wait_for(poll(), timeout)

    async def reload(self) -> None:
        await self._call("Page.reload", {})

    async def insert_text(self, text: str) -> None:
        """Text put into the focused field as a paste or an input method puts it (newlines included)."""
        await self._call("Input.insertText", {"text": text})

    async def press_enter(self, *, shift: bool = False) -> None:
        """A real Enter key (Shift+Enter with `shift`) on the focused element."""
        key = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "modifiers": 8 if shift else 0}
        await self._call("Input.dispatchKeyEvent", {"type": "keyDown", "text": "\r", **key})
        await self._call("Input.dispatchKeyEvent", {"type": "keyUp", **key})

    async def choose_files(self, selector: str, paths: list[Path]) -> None:
        """Pick `paths` in the file input `selector`, as the browser's file chooser does (its change event fires)."""
        document = await self._call("DOM.getDocument", {})
        root = document["result"]["root"]["nodeId"]
        found = await self._call("DOM.querySelector", {"nodeId": root, "selector": selector})
        await self._call("DOM.setFileInputFiles", {"files": [str(path) for path in paths],
                                                   "nodeId": found["result"]["nodeId"]})

    async def resize(self, width: int, height: int, *, mobile: bool = True) -> None:
        """Lay the page out as a phone (or, `mobile=False`, a desktop window) of `width` x `height` CSS pixels would."""
        await self._call("Emulation.setDeviceMetricsOverride",
                         {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    async def screenshot(self) -> bytes:
        """The visible page as PNG bytes."""
        reply = await self._call("Page.captureScreenshot", {"format": "png"})
        return base64.b64decode(reply["result"]["data"])


@asynccontextmanager
async def open_page(url: str, profile: Path) -> AsyncIterator[Page]:
    """Chromium on `url` with its own profile (reuse `profile` to keep localStorage across runs)."""
    (profile / "DevToolsActivePort").unlink(missing_ok=True)  # a previous run's: its port is not this browser's
    process = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
        "--remote-debugging-port=0", "--remote-allow-origins=*", url,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as http:
            port = await asyncio.wait_for(_devtools_port(profile), WAIT)
            target = await asyncio.wait_for(_page_target(http, port, url), WAIT)
            async with http.ws_connect(target, max_msg_size=0) as ws:
                yield Page(ws)
    finally:
        process.terminate()
        await process.wait()


async def _devtools_port(profile: Path) -> int:
    """The port the browser bound for DevTools (asked for port 0): the first line of `DevToolsActivePort`."""
    while True:
        with contextlib.suppress(FileNotFoundError, ValueError, IndexError):
            return int((profile / "DevToolsActivePort").read_text(encoding="utf-8").splitlines()[0])
        await asyncio.sleep(0.05)  # polling for the browser to write the file


async def _page_target(http: aiohttp.ClientSession, port: int, url: str) -> str:
    while True:
        try:
            # A short timeout per request: a browser still starting can accept the connection and not answer it.
            async with http.get(f"http://127.0.0.1:{port}/json/list", timeout=aiohttp.ClientTimeout(total=3)) as response:
                for target in await response.json():
                    if target.get("type") == "page" and target.get("url", "").startswith(url.split("?")[0]):
                        return str(target["webSocketDebuggerUrl"])
        except (aiohttp.ClientError, TimeoutError):
            pass  # not listening (or not answering) yet
        await asyncio.sleep(0.1)  # polling for the browser to come up
