"""`chorus doctor` for `mcp.servers`: start each server, list its tools, or say why it fails.

Owns `check_mcp`. Each server is started on its own (they run concurrently),
given `CONNECT_TIMEOUT` for initialize and tools/list, and stopped again; the
check names its tools or carries the connection error (a stdio server's last
stderr line included). Header and env values never appear in the output.
"""
from __future__ import annotations

import asyncio

from agent.settings import McpServerSettings
from agent.tools.mcp import McpConnection, public_name
from gateway.doctor.checks import Check

CONNECT_TIMEOUT = 20.0
LISTED_TOOLS = 12


async def _check_server(name: str, settings: McpServerSettings) -> Check:
    key = f"mcp.servers.{name}"
    connection = McpConnection(name, settings, connect_timeout=CONNECT_TIMEOUT)
    try:
        await connection.start(wait=CONNECT_TIMEOUT + 5)
        status = connection.status()
    finally:
        await connection.stop()
    where = " ".join(settings.command or []) if settings.command else settings.url or ""
    if status.state != "up":
        fix = f"check {key}.command, .env and .cwd (run the command by hand)" if settings.command else \
            f"check {key}.url and .headers, and that the server is up"
        return Check(key, False, f"{status.transport} {where}: {status.error or status.state}", fix)
    names = [public_name(name, tool) for tool in status.tools]
    shown = ", ".join(names[:LISTED_TOOLS]) + (f", … ({len(names)} in all)" if len(names) > LISTED_TOOLS else "")
    return Check(key, True, f"{status.transport}: {len(names)} tools: {shown or 'none'}")


async def check_mcp(servers: dict[str, McpServerSettings]) -> list[Check]:
    """One check per configured server, in config order."""
    return list(await asyncio.gather(*(_check_server(name, settings) for name, settings in servers.items())))


__all__ = ["check_mcp"]
