"""Saving runtime changes back to the YAML config file, atomically, keeping the operator's comments.

Owns `save_changes`. For a block-style section (`compression:` followed by
indented keys, as in `config.yaml.example`) only the value of each changed
line is replaced; the comment after it, the other lines and `${ENV}`
references stay as written. A key missing from its section is inserted
under the section header. A flow-style section (`compression: {…}`) or a
missing section makes the whole file be rewritten with `yaml.safe_dump`
(comments are lost; the result says `"mode": "rewritten"`). The new text is
validated by `load_config` on a temporary file beside the original, then
renamed over it, so a crash or a bad edit never leaves a broken config.
Knows nothing of HTTP or the running gateway.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from chorus_errors import ConfigError
from gateway.config import load_config

SaveMode = Literal["edited", "rewritten"]
_HEADER = re.compile(r"^(?P<name>[A-Za-z_][\w-]*):[ \t]*(?P<rest>[^\n]*)$")


class ConfigWriteError(ConfigError):
    """The config file could not be written (permissions, disk); the original is untouched."""


@dataclass(frozen=True, slots=True)
class SaveResult:
    path: Path
    mode: SaveMode  # edited: lines changed in place, comments kept; rewritten: comments lost


def _scalar(value: object) -> str:
    # JSON is valid YAML for the scalars and small mappings the live keys hold.
    return json.dumps(value)


def _is_block_header(rest: str) -> bool:
    return rest == "" or rest.startswith("#")


def _edit_line(line: str, name: str, value: object) -> str | None:
    match = re.match(rf"^(?P<indent>[ \t]+){re.escape(name)}:(?P<pad>[ \t]*)(?P<old>[^#\n]*?)(?P<tail>[ \t]*#[^\n]*)?(?P<nl>\n?)$", line)
    if match is None:
        return None
    new = _scalar(value)
    old, tail = match["old"], match["tail"] or ""
    # Keep the comment's column when the new value fits in the old one's room.
    room = len(old) + len(tail) - len(tail.lstrip())
    spacing = " " * max(1, room - len(new)) if tail else ""
    return f"{match['indent']}{name}:{match['pad'] or ' '}{new}{spacing}{tail.lstrip() if tail else ''}{match['nl']}"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _edit_text(text: str, section: str, name: str, value: object) -> str | None:
    """`text` with `section.name` set in place, or None when the section is not a block mapping."""
    lines = text.splitlines(keepends=True)
    start = None
    for i, line in enumerate(lines):
        header = _HEADER.match(line.rstrip("\n"))
        if header and header["name"] == section:
            if not _is_block_header(header["rest"].strip()):
                return None
            start = i
            break
    if start is None:
        return None
    end = len(lines)
    child_indent: str | None = None
    for j in range(start + 1, len(lines)):
        stripped = lines[j].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not lines[j][0].isspace():
            end = j
            break
        if child_indent is None:
            child_indent = _indent(lines[j])
    child_indent = child_indent or "  "
    for j in range(start + 1, end):
        if _indent(lines[j]) != child_indent:
            continue
        edited = _edit_line(lines[j], name, value)
        if edited is not None:
            lines[j] = edited
            return "".join(lines)
    if not lines[start].endswith("\n"):
        lines[start] += "\n"
    lines.insert(start + 1, f"{child_indent}{name}: {_scalar(value)}\n")
    return "".join(lines)


def _rewrite(text: str, changes: Mapping[str, object]) -> str:
    raw: Any = yaml.safe_load(text) or {}
    if not isinstance(raw, dict):
        raise ConfigError("the config file's top level is not a mapping; fix it before saving changes")
    for key, value in changes.items():
        node = raw
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value
    return yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)


def _json_value(value: object) -> object:
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def save_changes(path: Path, changes: Mapping[str, object]) -> SaveResult:
    """Write `changes` (dotted keys → validated values) into the config file at `path`.

    Raises:
        ConfigError: the file cannot be read or written, or the edited file would not load
            (the original is left untouched).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file to save the change ({exc.strerror})") from None
    edited: str | None = text
    for key, value in changes.items():
        section, _, name = key.partition(".")
        edited = _edit_text(edited, section, name, _json_value(value)) if edited is not None and "." not in name else None
        if edited is None:
            break
    if edited is not None:
        try:
            _replace_validated(path, edited, changes)
            return SaveResult(path=path, mode="edited")
        except ConfigWriteError:
            raise
        except ConfigError:
            # The line edit did not give the wanted value (e.g. a nested block under the key): rewrite instead.
            pass
    _replace_validated(path, _rewrite(text, {k: _json_value(v) for k, v in changes.items()}), changes)
    return SaveResult(path=path, mode="rewritten")


def _replace_validated(path: Path, text: str, changes: Mapping[str, object]) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        shutil.copymode(path, tmp)
        loaded = load_config(tmp).model_dump(mode="python")
        for key, value in changes.items():
            node: Any = loaded
            for part in key.split("."):
                node = node[part]
            if node != value:
                raise ConfigError(f"{path}: saving {key} produced {node!r} instead of {value!r}; file left unchanged",
                                  key=key)
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigWriteError(f"{path}: cannot write the config file ({exc.strerror}); nothing was changed") from None
    finally:
        tmp.unlink(missing_ok=True)


__all__ = ["ConfigWriteError", "SaveMode", "SaveResult", "save_changes"]
