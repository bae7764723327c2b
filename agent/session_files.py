"""Reading and writing session files: a JSON array of chat messages, or JSON Lines of session objects.

Owns the file format of `chorus compress` and `chorus sessions import/export`
(the format of the shared data set: one `{"id", "messages", "tools"?, ...}`
object per line). Errors name the file, the line and what is wrong.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from agent.messages import Message, ToolSchema, messages_from_wire, messages_to_wire, tool_schema_from_wire
from chorus_errors import MessageFormatError

FileFormat = Literal["array", "jsonl"]


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # source, license, meta… passed through


def detect_format(path: Path) -> FileFormat:
    with path.open("r", encoding="utf-8") as handle:
        for line in handle:
            stripped = line.lstrip()
            if stripped:
                return "array" if stripped.startswith("[") else "jsonl"
    return "jsonl"


def _record(raw: object, where: str, fallback_id: str) -> SessionRecord:
    if not isinstance(raw, dict):
        raise MessageFormatError(f"{where}: expected a session object with 'messages'")
    messages_raw = raw.get("messages")
    if not isinstance(messages_raw, list):
        raise MessageFormatError(f"{where}: 'messages' must be a list", field="messages")
    try:
        messages = messages_from_wire(messages_raw)
        tools = tuple(tool_schema_from_wire(t) for t in raw.get("tools") or ())
    except MessageFormatError as exc:
        raise MessageFormatError(f"{where}: {exc}", index=exc.index, field=exc.field) from None
    extra = {k: v for k, v in raw.items() if k not in {"id", "messages", "tools"}}
    return SessionRecord(id=str(raw.get("id", fallback_id)), messages=tuple(messages), tools=tools, extra=extra)


def read_sessions(path: Path) -> Iterator[SessionRecord]:
    """Yield each session of the file in order."""
    if detect_format(path) == "array":
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise MessageFormatError(f"{path}: not valid JSON at line {exc.lineno}: {exc.msg}") from None
        except RecursionError:
            raise MessageFormatError(f"{path}: JSON nested too deeply to be a chat transcript") from None
        yield _record({"id": path.stem, "messages": raw}, str(path), path.stem)
        return
    with path.open("r", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MessageFormatError(f"{path}:{number}: not valid JSON: {exc.msg}") from None
            except RecursionError:
                raise MessageFormatError(f"{path}:{number}: JSON nested too deeply to be a session") from None
            yield _record(raw, f"{path}:{number}", f"{path.stem}-{number}")


def session_to_json(record: SessionRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"id": record.id, **record.extra, "messages": messages_to_wire(record.messages)}
    if record.tools:
        out["tools"] = [tool.to_wire() for tool in record.tools]
    return out


def write_session_lines(handle: TextIO, records: Iterable[SessionRecord]) -> int:
    """Write sessions as JSON Lines to an open text stream (standard output for `-o -`)."""
    count = 0
    for record in records:
        handle.write(json.dumps(session_to_json(record), ensure_ascii=False) + "\n")
        count += 1
    return count


def write_sessions(path: Path, records: Iterable[SessionRecord], fmt: FileFormat = "jsonl") -> int:
    """Write sessions in `fmt`; an array file holds the messages of exactly one session."""
    with path.open("w", encoding="utf-8") as handle:
        if fmt == "jsonl":
            return write_session_lines(handle, records)
        count = 0
        for record in records:
            if count:
                raise MessageFormatError(f"{path}: a JSON array file holds one session; use JSON Lines")
            json.dump(messages_to_wire(record.messages), handle, ensure_ascii=False)
            count += 1
        return count
