"""Saving runtime changes back to the YAML config file, atomically, keeping the operator's comments.

Owns `save_changes`. For block-style sections (`platforms:` / `  telegram:`
followed by indented keys, as in `config.yaml.example`, at any depth) only the
value of each changed line is replaced (a value written as a nested block or
`- item` list below its key is replaced with it); the comment after it, the
other lines and `${ENV}` references stay as written. A key missing from its
section is inserted under the section header, a missing section at the end.
A flow-style section on the way (`compression: {…}`) makes the whole file be
rewritten with `yaml.safe_dump` (comments are lost; the result says
`"mode": "rewritten"`). The new text is
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
from pydantic import SecretStr

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
    match = re.match(rf"^(?P<indent>[ \t]*){re.escape(name)}:(?P<pad>[ \t]*)(?P<old>[^#\n]*?)(?P<tail>[ \t]*#[^\n]*)?(?P<nl>\n?)$", line)
    if match is None:
        return None
    new = _scalar(value)
    old, tail = match["old"], match["tail"] or ""
    # Keep the comment's column when the new value fits in the old one's room.
    room = len(old) + len(tail) - len(tail.lstrip())
    spacing = " " * max(1, room - len(new)) if tail else ""
    return f"{match['indent']}{name}:{match['pad'] or ' '}{new}{spacing}{tail.lstrip() if tail else ''}{match['nl'] or chr(10)}"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _named(line: str, indent: str, name: str) -> re.Match[str] | None:
    if _indent(line) != indent:
        return None
    return _HEADER.match(line[len(indent):].rstrip("\n")) if line[len(indent):].startswith(f"{name}:") else None


def _block_end(lines: list[str], start: int, hi: int, indent: str, *, dashes: bool) -> int:
    """The first line after `start` that is no longer inside the value of the key on line `start`."""
    for j in range(start + 1, hi):
        if not _content(lines[j]):
            continue
        inner = _indent(lines[j])
        if len(inner) > len(indent) or (dashes and inner == indent and lines[j].lstrip().startswith("- ")):
            continue
        return j
    return hi


def _edit_in(lines: list[str], lo: int, hi: int, parent: str | None, parts: list[str], value: object) -> bool:
    """Set `parts` (a dotted key below the block at lines lo..hi) in place; False: not a block edit."""
    indent = next((_indent(lines[j]) for j in range(lo, hi) if _content(lines[j])),
                  "" if parent is None else parent + "  ")
    if parent is not None and len(indent) <= len(parent):
        indent = parent + "  "  # an empty block: its first key goes one step in
    name, rest = parts[0], parts[1:]
    for j in range(lo, hi):
        header = _named(lines[j], indent, name)
        if header is None:
            continue
        if rest:
            if not _is_block_header(header["rest"].strip()):
                return False  # flow style (`name: {…}`): only a rewrite can change it
            return _edit_in(lines, j + 1, _block_end(lines, j, hi, indent, dashes=False), indent, rest, value)
        edited = _edit_line(lines[j], name, value)
        if edited is None:
            return False
        # A value written as a nested block or a `- item` list below the key is replaced with it.
        lines[j + 1:_block_end(lines, j, hi, indent, dashes=True)] = []
        lines[j] = edited
        return True
    added = [f"{indent}{'  ' * depth}{part}:\n" for depth, part in enumerate(parts[:-1])]
    added.append(f"{indent}{'  ' * len(parts[:-1])}{parts[-1]}: {_scalar(value)}\n")
    at = lo if parent is not None else hi
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    lines[at:at] = added
    return True


def _edit_text(text: str, key: str, value: object) -> str | None:
    """`text` with the dotted `key` set in place (comments kept), or None when only a rewrite can do it."""
    lines = text.splitlines(keepends=True)
    return "".join(lines) if _edit_in(lines, 0, len(lines), None, key.split("."), value) else None


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
    if isinstance(value, SecretStr):
        return value.get_secret_value()  # written to the file as typed: the operator chose to store it there
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
        edited = _edit_text(edited, key, _json_value(value)) if edited is not None else None
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
            if _json_value(node) != _json_value(value):
                secret = isinstance(node, SecretStr) or isinstance(value, SecretStr)
                got = "a different value" if secret else repr(node)  # a secret is never echoed
                raise ConfigError(f"{path}: saving {key} produced {got} instead of the value given; file left unchanged",
                                  key=key)
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigWriteError(f"{path}: cannot write the config file ({exc.strerror}); nothing was changed") from None
    finally:
        tmp.unlink(missing_ok=True)


__all__ = ["ConfigWriteError", "SaveMode", "SaveResult", "save_changes"]
