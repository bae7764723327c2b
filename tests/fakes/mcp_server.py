"""A real MCP server written with the official SDK, for tests and benches.

Run as a stdio server: `python tests/fakes/mcp_server.py` (what `mcp.servers.NAME.command` starts), or
serve it over streamable HTTP on 127.0.0.1 in-process with `serve_http()`.

Tools: `meet(group, count)` (answers "met" only when `count` calls are in flight at once), `echo(text)`, `add(a, b)`, `search(query, limit)`, `big(chars)` (a result of `chars` characters
that starts with HEAD and ends with TAIL), `hang(seconds)`, `crash()` (the process exits mid-call),
`fail(message)` (an error result).
"""
from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer

SERVER_NAME = "chorus-test"


MEET_TIMEOUT = 5.0


def build_server() -> MCPServer:
    server = MCPServer(SERVER_NAME)
    arrived: dict[str, int] = {}
    everyone: dict[str, asyncio.Event] = {}

    @server.tool()
    async def meet(group: str, count: int) -> str:
        """Wait until `count` calls of `group` are in flight at once: "met" proves they ran concurrently."""
        arrived[group] = arrived.get(group, 0) + 1
        event = everyone.setdefault(group, asyncio.Event())
        if arrived[group] >= count:
            event.set()
        try:
            await asyncio.wait_for(event.wait(), MEET_TIMEOUT)
        except TimeoutError:
            return "alone"
        return "met"

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    @server.tool()
    def search(query: str, limit: int = 3) -> str:
        """Search the test corpus; one line per hit."""
        return "\n".join(f"hit {i + 1} for {query}" for i in range(limit))

    @server.tool()
    def big(chars: int, seed: str = "x") -> str:
        """Return a text of exactly `chars` characters, starting with HEAD and ending with TAIL."""
        body = (seed * (chars // max(1, len(seed)) + 1))[: max(0, chars - 8)]
        return "HEAD" + body + "TAIL"

    @server.tool()
    async def hang(seconds: float) -> str:
        """Sleep for `seconds`, then answer."""
        await asyncio.sleep(seconds)
        return "woke up"

    @server.tool()
    def crash() -> str:
        """Exit the server process in the middle of the call."""
        print("crash tool called: exiting", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool()
    def fail(message: str) -> str:
        """Raise an error inside the tool."""
        raise ValueError(message)

    return server


@asynccontextmanager
async def serve_http() -> AsyncIterator[str]:
    """Serve the server over streamable HTTP on a free 127.0.0.1 port; yields the endpoint URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build_server().streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    config = server.config
    if not config.loaded:
        config.load()
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    loop = asyncio.create_task(server.main_loop())
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(loop, 10)
        await server.shutdown(sockets=[sock])
        sock.close()

if __name__ == "__main__":
    if os.environ.get("CHORUS_TEST_MCP_FAIL_START"):
        print(f"refusing to start: {os.environ['CHORUS_TEST_MCP_FAIL_START']}", file=sys.stderr, flush=True)
        sys.exit(2)
    build_server().run()
