"""One MCP tool as an agent `Tool`: schema check, timeout, result cut, failures as tool errors.

Owns `McpTool` and `CallLimits`. Arguments are validated against the tool's
JSON schema before anything is sent (a bad call goes back to the model as a
tool error); a call runs under `mcp.tool_timeout_seconds`; a result longer
than `mcp.max_result_chars` keeps its head and tail around a marker. Every
failure (timeout, server down, server error, protocol error) is returned as a
`refused` text, so a tool never fails a turn. Each call logs one
`mcp.tool_called` line and hands a `ToolCallOutcome` to the observer the
gateway gives (metrics and failure events come from that value, never from the
log line). Knows nothing of chats.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from jsonschema import exceptions as schema_errors
from jsonschema import validators
from mcp import types
from mcp.shared.exceptions import MCPError

from agent.messages import ToolSchema
from agent.tools.base import ToolContext, refused
from agent.tools.mcp._connection import ListedTool, McpUnavailable
from agent.tools.mcp._names import public_name
from agent.tools.mcp._results import cut_middle, render_content

log = structlog.get_logger(__name__)

MAX_DESCRIPTION_CHARS = 1024  # descriptions are sent with every request: a long one costs tokens each turn
MAX_ERROR_CHARS = 2000
SCHEMA_PROBLEM_CHARS = 300
EMPTY_RESULT = "(the tool returned no output)"


class CallTarget(Protocol):
    """Where a tool call goes (an `McpConnection`)."""

    name: str

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float) -> types.CallToolResult: ...


@dataclass(frozen=True, slots=True)
class CallLimits:
    timeout_seconds: float
    max_result_chars: int


def offered_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as offered to the model: an object schema (OpenAI requires one)."""
    parameters = dict(schema)
    parameters.pop("$schema", None)
    if parameters.get("type") != "object":
        return {"type": "object", "properties": {}}
    parameters.setdefault("properties", {})
    return parameters


def _validator(schema: Mapping[str, Any]) -> Any | None:
    """A validator for the tool's schema, or None when the schema itself is invalid (calls are not checked)."""
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except schema_errors.SchemaError:
        return None
    return cls(schema)


def schema_problem(validator: Any | None, arguments: Mapping[str, Any]) -> str | None:
    """The first way `arguments` break the schema, as one line naming where; None if they fit."""
    if validator is None:
        return None
    error = schema_errors.best_match(validator.iter_errors(dict(arguments)))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
    return f"{where}: {error.message}"[:SCHEMA_PROBLEM_CHARS]


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """How one MCP tool call ended: `ok`, `cancelled`, `timeout`, `unavailable`, `error`, `tool_error`, …"""

    tool: str
    server: str
    outcome: str
    latency_seconds: float
    error: str | None = None


CallObserver = Callable[[ToolCallOutcome], None]


class McpTool:
    """A tool of one MCP server, named `server__tool` for the model."""

    def __init__(
        self, *, target: CallTarget, listed: ListedTool, limits: CallLimits, observe: CallObserver | None = None
    ) -> None:
        self._observe = observe
        self.server = target.name
        self.tool = listed.name
        self.name = public_name(target.name, listed.name)
        self.schema = ToolSchema(
            name=self.name,
            description=listed.description[:MAX_DESCRIPTION_CHARS] or f"{listed.name} (MCP server {target.name})",
            parameters=offered_parameters(listed.input_schema),
        )
        self._target = target
        self._limits = limits
        self._validator = _validator(listed.input_schema)

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        problem = schema_problem(self._validator, arguments)
        if problem is not None:
            self._log("invalid_arguments", 0.0, error=problem)
            return refused(f"arguments do not match the schema of {self.name}: {problem}; fix them and call again")
        started = time.perf_counter()
        timeout = self._limits.timeout_seconds
        try:
            result = await self._target.call(self.tool, dict(arguments), timeout=timeout)
        except asyncio.CancelledError:
            self._log("cancelled", started)
            raise
        except TimeoutError:
            self._log("timeout", started)
            return refused(f"{self.name} did not answer within {timeout:g}s; try a smaller request or another way")
        except McpUnavailable as exc:
            self._log("unavailable", started, error=str(exc))
            return refused(f"{self.name} is unavailable right now (its server is {exc.state}); try again later")
        except MCPError as exc:
            self._log("error", started, error=exc.message[:SCHEMA_PROBLEM_CHARS])
            return refused(f"{self.name} failed: {exc.message[:MAX_ERROR_CHARS]}")
        except Exception as exc:  # noqa: BLE001 - the tool boundary: a broken call never fails the turn
            self._log("failed", started, error=type(exc).__name__)
            return refused(f"{self.name} failed ({type(exc).__name__}); try another way")
        text = render_content(result.content, result.structured_content)
        if result.is_error:
            self._log("tool_error", started, error=text[:SCHEMA_PROBLEM_CHARS])
            return refused(f"{self.name} reported an error: {cut_middle(text, MAX_ERROR_CHARS)}")
        self._log("ok", started, chars=len(text))
        return cut_middle(text, self._limits.max_result_chars) if text else EMPTY_RESULT

    def _log(self, outcome: str, started: float, **fields: object) -> None:
        latency_ms = round((time.perf_counter() - started) * 1000, 2) if started else 0.0
        event = {"ok": "mcp.tool_called", "cancelled": "mcp.tool_cancelled"}.get(outcome, "mcp.tool_failed")
        level = log.info if outcome in ("ok", "cancelled") else log.warning
        level(event, tool=self.name, server=self.server, outcome=outcome, latency_ms=latency_ms, **fields)
        if self._observe is not None:
            error = fields.get("error")
            self._observe(ToolCallOutcome(self.name, self.server, outcome, latency_ms / 1000, str(error) if error else None))


__all__ = [
    "CallLimits", "CallObserver", "CallTarget", "McpTool", "ToolCallOutcome", "offered_parameters", "schema_problem",
]
