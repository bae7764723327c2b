"""Informative one-line stand-ins for old tool results (docs/design.md §3.5 step 1).

Owns how a pruned tool result still tells the model what happened, e.g.
`` [bash] ran `npm test` -> exit 0, 47 lines output `` or
`[read_file] read config.py from line 1 (3,400 chars)`. Works on bounded
slices of the output (never scans a whole multi-megabyte result with a regex)
and knows nothing of budgets or boundaries.
"""
from __future__ import annotations

import json
import re

from agent.messages import ToolCall

DUPLICATE_PLACEHOLDER = "[Duplicate tool output — same content as a more recent call]"
_ARG_PREVIEW_CHARS = 80
_SCAN_CHARS = 400  # bounded look at the start/end of an output for an exit code or error line
_EXIT_RE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|\bexit(?:ed)?(?: code|_code| status)?[:= ]+(-?\d+)", re.I)
_ERROR_LINE_RE = re.compile(r"\b(?:\w*Error|\w*Exception|FAILED|fatal|No such file)\b")
_SHELL_TOOLS = frozenset({"bash", "terminal", "shell", "run", "run_command", "execute", "exec", "sh", "cmd"})
_READ_TOOLS = frozenset({"read_file", "view", "cat", "open_file", "read"})
_WRITE_TOOLS = frozenset({"write_file", "create_file", "write", "edit_file", "patch", "str_replace"})
_SEARCH_TOOLS = frozenset({"search", "search_files", "grep", "find", "web_search", "session_search"})


def _arguments(call: ToolCall | None) -> dict[str, object]:
    if call is None or not call.arguments:
        return {}
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _preview(value: object, limit: int = _ARG_PREVIEW_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first(args: dict[str, object], *names: str) -> object | None:
    for name in names:
        if args.get(name) not in (None, ""):
            return args[name]
    return None


def _exit_code(content: str) -> str | None:
    for window in (content[:_SCAN_CHARS], content[-_SCAN_CHARS:]):
        match = _EXIT_RE.search(window)
        if match:
            return match.group(1) or match.group(2)
    return None


def _error_hint(content: str) -> str | None:
    """The last error line near the end (else the start) of an output, e.g. `ValueError: bad port`."""
    for window in (content[-_SCAN_CHARS * 2:], content[:_SCAN_CHARS]):
        for line in reversed(window.splitlines()):
            if "Traceback (most recent" not in line and _ERROR_LINE_RE.search(line):
                return _preview(line.strip(), 100)
    return None


def summarize_tool_result(call: ToolCall | None, content: str) -> str:
    """One informative line standing in for an old tool result."""
    name = call.name if call is not None else "tool"
    args = _arguments(call)
    lines = content.count("\n") + 1
    chars = len(content)
    lowered = name.rsplit("__", 1)[-1].lower()  # an MCP tool `server__tool` is classified by its own name
    if lowered in _SHELL_TOOLS or _first(args, "command", "cmd") is not None and lowered not in _READ_TOOLS:
        command = _first(args, "command", "cmd", "script")
        code = _exit_code(content)
        line = f"[{name}] ran `{_preview(command or '')}`"
        line += f" -> exit {code}, {lines:,} lines output" if code is not None else f" -> {lines:,} lines output"
    elif lowered in _READ_TOOLS:
        path = _first(args, "path", "file", "file_path", "filename")
        start = _first(args, "offset", "start_line", "line", "view_range")
        line = f"[{name}] read {_preview(path or '?')} from line {_preview(start) if start is not None else 1} ({chars:,} chars)"
    elif lowered in _WRITE_TOOLS:
        path = _first(args, "path", "file", "file_path", "filename")
        line = f"[{name}] wrote to {_preview(path or '?')} ({lines:,} lines result)"
    elif lowered in _SEARCH_TOOLS:
        query = _first(args, "query", "pattern", "q", "regex")
        where = _first(args, "path", "dir", "directory")
        place = f" in {_preview(where)}" if where is not None else ""
        line = f"[{name}] search for '{_preview(query or '')}'{place} -> {lines:,} lines ({chars:,} chars)"
    else:
        shown = ", ".join(f"{key}={_preview(value, 40)}" for key, value in list(args.items())[:3])
        line = f"[{name}]({shown}) -> {lines:,} lines, {chars:,} chars"
    hint = _error_hint(content)
    if hint:
        line += f"; error: {hint}"
    return line + " [output pruned by context compression]"


def truncate_arguments(arguments: str, *, limit: int, leaf_chars: int = 200) -> str:
    """Shrink long string values inside a JSON arguments text, staying valid JSON.

    Arguments that are not valid JSON are returned unchanged: we cannot make
    them valid, and a cut would only make them worse.
    """
    if len(arguments) <= limit:
        return arguments
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments

    def shrink(value: object) -> object:
        if isinstance(value, str):
            return value if len(value) <= leaf_chars else value[:leaf_chars] + "...[truncated]"
        if isinstance(value, dict):
            return {key: shrink(item) for key, item in value.items()}
        if isinstance(value, list):
            return [shrink(item) for item in value]
        return value

    shrunk = json.dumps(shrink(parsed), ensure_ascii=False)
    return shrunk if len(shrunk) < len(arguments) else arguments
