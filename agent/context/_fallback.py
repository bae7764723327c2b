"""The deterministic fallback summary (docs/design.md §3.6 tier 3): continuity anchors, at most 8,000 chars.

Owns what survives when no summary model could run: the latest user request
verbatim, the user's asks, the assistant's actions and tools, file paths,
exact error texts, and the carried-over previous summary. Precompiled regexes
over bounded slices of each message keep it fast on multi-megabyte spans.
Pure function; knows nothing of models or state.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from agent.context._handoff import is_handoff, is_real_user
from agent.messages import Message

FALLBACK_MAX_CHARS = 8_000
PREVIOUS_SUMMARY_MAX_CHARS = 3_000
TASK_MAX_CHARS = 1_400
_SCAN_HEAD = 1_500
_SCAN_TAIL = 1_500
_MAX_ASKS = 12
_MAX_SPEAKERS = 12
_SUBSTANTIAL_CHARS = 60
_MAX_ACTIONS = 24
_FIRST_ACTIONS = 4  # the first steps frame the task; the rest are the most recent
_MAX_FILES = 24
_MAX_ERRORS = 10
# Paths and errors are found token by token / line by line with cheap substring
# tests first; a regex only confirms a candidate (a regex scan of every
# position of every message was the slowest part of the fallback summary).
_PATH_TOKEN_RE = re.compile(
    r"(?:~|\.{1,2})?/(?:[\w.+-]+/)*[\w.+-]+|(?:[\w.+-]+/){2,}[\w.+-]+"
    r"|(?:[\w+-]+/)*[\w+-]+\.(?:py|pyi|js|mjs|ts|tsx|jsx|json|ya?ml|toml|md|rst|txt|cfg|ini|sh|"
    r"go|rs|java|kt|c|h|cc|cpp|hpp|rb|php|html|css|sql|lock|xml|csv|env)"
)
_PATH_STRIP = "\"'`()[]{}<>,;:!?"
_EXCEPTION_RE = re.compile(r"(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b")
_ERROR_MARKERS = ("FAILED", "error:", "fatal:", "No such file or directory", "command not found", "Permission denied")
_WS_RE = re.compile(r"\s+")
_MARKER_RE = re.compile("|".join(re.escape(marker) for marker in _ERROR_MARKERS))
_ERRORISH_RE = re.compile("Error|Exception|Traceback|" + _MARKER_RE.pattern)
# A whitespace-delimited token (as `str.split` cuts them) that holds "/" or "."; anchored at token starts.
_PATHISH_RE = re.compile(r"(?<!\S)[^\s/.]*[/.]\S*")


def _one_line(text: str, limit: int) -> str:
    flat = _WS_RE.sub(" ", text[: limit * 3]).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _bounded(text: str) -> str:
    if len(text) <= _SCAN_HEAD + _SCAN_TAIL:
        return text
    return text[:_SCAN_HEAD] + "\n" + text[-_SCAN_TAIL:]


def _paths(text: str) -> list[str]:
    """File paths mentioned in `text`: whitespace tokens that look like a path or a file name."""
    found = []
    for match in _PATHISH_RE.finditer(text):  # only the tokens holding "/" or ".", found in C
        token = match.group().strip(_PATH_STRIP).rstrip(".")
        if len(token) > 2 and token not in ("..", "./") and _PATH_TOKEN_RE.fullmatch(token):
            found.append(token)
    return found


def _error_lines(text: str) -> list[str]:
    """Lines that report an error: `SomeError: …`, a traceback header, or a well-known failure text."""
    if not _ERRORISH_RE.search(text):  # most outputs hold none of the words: skip the line loop
        return []
    found = []
    for line in text.splitlines():
        if "Error" in line or "Exception" in line or "Traceback" in line:
            stripped = line.strip()
            if stripped.startswith("Traceback (most recent") or _EXCEPTION_RE.match(stripped):
                found.append(stripped)
                continue
        if _MARKER_RE.search(line):
            found.append(line.strip())
    return found


def _call_preview(name: str, arguments: str) -> str:
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        return f"{name}({_one_line(arguments, 100)})"
    if isinstance(parsed, dict):
        for key in ("command", "cmd", "path", "query", "file_path"):
            if isinstance(parsed.get(key), str):
                return f"{name}: {_one_line(parsed[key], 140)}"
        shown = ", ".join(f"{k}={_one_line(json.dumps(v, ensure_ascii=False), 40)}" for k, v in list(parsed.items())[:3])
        return f"{name}({shown})"
    return f"{name}({_one_line(arguments, 100)})"


def _add(items: list[str], value: str, limit: int, *, keep_first: int = 0) -> None:
    """Append a new item; beyond `limit`, drop the oldest after the first `keep_first`."""
    if value and value not in items:
        items.append(value)
        if len(items) > limit:
            del items[keep_first]


def fallback_summary(dropped: Sequence[Message], previous_summary: str | None) -> str:
    """Continuity anchors extracted from the dropped span, newest first where it matters, <= 8,000 chars."""
    asks: list[str] = []
    actions: list[str] = []
    files: list[str] = []
    errors: list[str] = []
    tools: Counter[str] = Counter()
    speakers: Counter[str] = Counter()
    latest_request: str | None = None
    action_count = 0
    for message in dropped:
        if is_handoff(message):
            continue
        text = message.text
        if is_real_user(message):
            latest_request = text
            if message.name:
                speakers[message.name] += 1
            # Questions and substantial requests, not every short chat line of a busy group.
            if "?" in text or len(text) >= _SUBSTANTIAL_CHARS:
                _add(asks, _one_line(text, 240), _MAX_ASKS, keep_first=2)
        elif message.role == "assistant":
            if text.strip():
                _add(actions, "said: " + _one_line(text, 160), _MAX_ACTIONS, keep_first=_FIRST_ACTIONS)
            for call in message.tool_calls:
                tools[call.name] += 1
                action_count += 1
                _add(actions, "ran " + _call_preview(call.name, call.arguments), _MAX_ACTIONS, keep_first=_FIRST_ACTIONS)
                for path in _paths(call.arguments[:_SCAN_HEAD]):
                    _add(files, path, _MAX_FILES)
        elif message.role == "tool":
            for line in _error_lines(_bounded(text)):
                _add(errors, _one_line(line, 220), _MAX_ERRORS)
            continue
        for path in _paths(_bounded(text)):
            _add(files, path, _MAX_FILES)
    sections: list[tuple[str, str]] = []
    if latest_request is not None:
        sections.append(("Historical task snapshot", _clip_block(latest_request, TASK_MAX_CHARS)))
    if previous_summary:
        sections.append(("Previous summary (carried over)", _clip_block(previous_summary, PREVIOUS_SUMMARY_MAX_CHARS)))
    if speakers:
        shown = ", ".join(f"{name} ({count})" for name, count in speakers.most_common(_MAX_SPEAKERS))
        more = len(speakers) - _MAX_SPEAKERS
        sections.append(("Participants", shown + (f", and {more} more" if more > 0 else "")))
    if asks:
        sections.append(("User requests and questions", "\n".join(f"- {ask}" for ask in asks)))
    if actions:
        sections.append(("Completed actions", "\n".join(f"- {action}" for action in actions)))
    if tools:
        sections.append(("Tools used", ", ".join(f"{name} x{count}" for name, count in tools.most_common())))
    if files:
        sections.append(("Relevant files", "\n".join(f"- {path}" for path in files)))
    if errors:
        sections.append(("Errors seen (exact text)", "\n".join(f"- {error}" for error in errors)))
    header = (
        "The summary model was unavailable; these continuity anchors were extracted deterministically "
        f"from {len(dropped)} earlier messages ({action_count} tool calls)."
    )
    return _fit([header, *(f"## {title}\n{text}" for title, text in sections)], FALLBACK_MAX_CHARS)


def _clip_block(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fit(blocks: list[str], limit: int) -> str:
    out: list[str] = []
    used = 0
    for block in blocks:
        room = limit - used - 2
        if room <= 40:
            break
        if len(block) > room:
            block = block[: room - 1] + "…"
        out.append(block)
        used += len(block) + 2
    return "\n\n".join(out)
