"""Skills on disk: `<home>/skills/<name>/SKILL.md` plus optional `references/`, `templates/`, `scripts/`.

Owns name and path validation, size limits, the security scan before every
write, atomic writes under a cross-process lock, and listing. A deleted skill
is moved to `.trash/` rather than erased, so a bad `delete` loses nothing.
Knows nothing of tools, chats or prompts; the scanner is injected.
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

import filelock
import structlog

from agent.atomic_files import atomic_write
from chorus_errors import ChorusError

log = structlog.get_logger(__name__)

SKILL_FILE: Final = "SKILL.md"
SUPPORT_DIRS: Final = ("references", "templates", "scripts")
MAX_NAME_CHARS: Final = 64
MAX_SKILL_CHARS: Final = 20_000
MAX_SUPPORT_FILE_CHARS: Final = 50_000
MAX_DESCRIPTION_CHARS: Final = 200
LOCK_TIMEOUT_SECONDS: Final = 30.0
TRASH_DIR: Final = ".trash"
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")
_FILE_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class Verdict(Protocol):
    """What the security scanner returns (see `agent.memory.scanner.ScanVerdict`)."""

    @property
    def ok(self) -> bool: ...

    def describe(self) -> str: ...


Scanner = Callable[[str], Verdict]


class SkillError(ChorusError):
    """A skill operation was refused; the message says what was wrong and what to do."""


class SkillBlocked(SkillError):
    """The security scan refused the content; `verdict` names the pattern."""

    def __init__(self, message: str, *, verdict: Verdict) -> None:
        super().__init__(message)
        self.verdict = verdict


@dataclass(frozen=True, slots=True)
class SkillInfo:
    name: str
    description: str
    chars: int
    files: tuple[str, ...]  # supporting files, relative to the skill directory


@dataclass(frozen=True, slots=True)
class SkillDocument:
    name: str
    file: str  # SKILL.md or a supporting file's relative path
    content: str
    files: tuple[str, ...]


def validate_name(name: str) -> str:
    """Return `name` if it is a lowercase slug (a-z, 0-9, inner hyphens) of at most 64 characters."""
    if not isinstance(name, str) or not name:
        raise SkillError("a skill needs a name: lowercase letters, digits and hyphens, e.g. 'deploy-checklist'")
    if len(name) > MAX_NAME_CHARS:
        raise SkillError(f"skill name is {len(name)} characters; the limit is {MAX_NAME_CHARS}")
    if not _NAME.fullmatch(name):
        raise SkillError(
            f"skill name {name[:80]!r} is not allowed: use lowercase letters, digits and inner hyphens only "
            "(no spaces, dots, slashes or capitals), e.g. 'deploy-checklist'"
        )
    return name


def validate_file(file: str) -> str:
    """Return a supporting file path `<references|templates|scripts>/<name>` or raise."""
    parts = file.split("/")
    if len(parts) != 2 or parts[0] not in SUPPORT_DIRS or not _FILE_PART.fullmatch(parts[1]) or ".." in parts[1]:
        raise SkillError(
            f"file {file[:120]!r} is not allowed: give '{SKILL_FILE}' or one of "
            f"{', '.join(d + '/<name>' for d in SUPPORT_DIRS)} (plain file names, no '..')"
        )
    return file


def describe(content: str) -> str:
    """The `description:` of a front-matter block, else the first line of prose."""
    lines = content.splitlines()
    if lines and lines[0].strip() == "---":
        for line in lines[1:]:
            if line.strip() == "---":
                break
            key, _, value = line.partition(":")
            if key.strip() == "description" and value.strip():
                return value.strip().strip("\"'")[:MAX_DESCRIPTION_CHARS]
    for line in lines:
        text = line.strip().lstrip("#").strip()
        if text and text != "---" and ":" not in text[:20]:
            return text[:MAX_DESCRIPTION_CHARS]
    return ""


class SkillLibrary:
    """The skills of one home directory.

    Args:
        root: `<home>/skills`.
        scanner: the security scan run on every text before it is written.
        clock: seconds since the epoch, for trash names.
    """

    def __init__(self, root: Path, *, scanner: Scanner, clock: Callable[[], float] = time.time) -> None:
        self.root = root
        self._scanner = scanner
        self._clock = clock

    def _dir(self, name: str) -> Path:
        return self.root / validate_name(name)

    def _lock(self) -> filelock.BaseFileLock:
        self.root.mkdir(parents=True, exist_ok=True)
        return filelock.FileLock(str(self.root / ".lock"), timeout=LOCK_TIMEOUT_SECONDS)

    def _files(self, directory: Path) -> tuple[str, ...]:
        found = [
            f"{sub}/{path.name}"
            for sub in SUPPORT_DIRS
            if (directory / sub).is_dir()
            for path in sorted((directory / sub).iterdir())
            if path.is_file() and not path.name.startswith(".")
        ]
        return tuple(found)

    def exists(self, name: str) -> bool:
        return (self._dir(name) / SKILL_FILE).is_file()

    def list_skills(self) -> list[SkillInfo]:
        """Every valid skill, by name."""
        if not self.root.is_dir():
            return []
        skills = []
        for directory in sorted(self.root.iterdir()):
            skill_file = directory / SKILL_FILE
            if not _NAME.fullmatch(directory.name) or not skill_file.is_file():
                continue
            content = skill_file.read_text(encoding="utf-8", errors="replace")
            skills.append(SkillInfo(directory.name, describe(content), len(content), self._files(directory)))
        return skills

    def view(self, name: str, file: str | None = None) -> SkillDocument:
        """Read SKILL.md (or one supporting file) of a skill."""
        directory = self._dir(name)
        relative = SKILL_FILE if file in (None, "", SKILL_FILE) else validate_file(str(file))
        path = directory / relative
        if not (directory / SKILL_FILE).is_file():
            raise SkillError(f"no skill named {name!r}; known skills: {', '.join(s.name for s in self.list_skills()) or 'none'}")
        if not path.is_file():
            raise SkillError(f"skill {name!r} has no file {relative!r}; its files: {', '.join(self._files(directory)) or 'none'}")
        return SkillDocument(name, relative, path.read_text(encoding="utf-8", errors="replace"), self._files(directory))

    def _check(self, name: str, relative: str, content: str) -> None:
        limit = MAX_SKILL_CHARS if relative == SKILL_FILE else MAX_SUPPORT_FILE_CHARS
        if not content.strip():
            raise SkillError(f"{relative} of skill {name!r} would be empty; give the content to write")
        if len(content) > limit:
            raise SkillError(
                f"{relative} of skill {name!r} is {len(content):,} characters; the limit is {limit:,}. "
                "Shorten it or move detail into references/"
            )
        verdict = self._scanner(content)
        if not verdict.ok:
            log.warning("skills.write_blocked", skill=name, file=relative, verdict=verdict.describe())
            raise SkillBlocked(
                f"refused to write {relative} of skill {name!r}: security scan {verdict.describe()}. "
                "Remove that text and try again",
                verdict=verdict,
            )

    def create(self, name: str, content: str, *, file: str | None = None) -> SkillDocument:
        """Create a new skill's SKILL.md, or add a supporting file to an existing skill."""
        directory = self._dir(name)
        if file not in (None, "", SKILL_FILE):
            return self._write_support(name, validate_file(str(file)), content, must_exist=False)
        self._check(name, SKILL_FILE, content)
        with self._lock():
            if (directory / SKILL_FILE).exists():
                raise SkillError(f"skill {name!r} already exists; use action 'update' to change it")
            atomic_write(directory / SKILL_FILE, content)
        log.info("skills.created", skill=name, chars=len(content))
        return self.view(name)

    def update(self, name: str, content: str, *, file: str | None = None) -> SkillDocument:
        """Replace the SKILL.md (or a supporting file) of an existing skill."""
        directory = self._dir(name)
        if file not in (None, "", SKILL_FILE):
            return self._write_support(name, validate_file(str(file)), content, must_exist=True)
        self._check(name, SKILL_FILE, content)
        with self._lock():
            if not (directory / SKILL_FILE).is_file():
                raise SkillError(f"no skill named {name!r}; use action 'create' to make it")
            atomic_write(directory / SKILL_FILE, content)
        log.info("skills.updated", skill=name, chars=len(content))
        return self.view(name)

    def _write_support(self, name: str, relative: str, content: str, *, must_exist: bool) -> SkillDocument:
        directory = self._dir(name)
        self._check(name, relative, content)
        with self._lock():
            if not (directory / SKILL_FILE).is_file():
                raise SkillError(f"no skill named {name!r}; create its {SKILL_FILE} first")
            present = (directory / relative).is_file()
            if must_exist and not present:
                raise SkillError(f"skill {name!r} has no file {relative!r}; use action 'create' to add it")
            if not must_exist and present:
                raise SkillError(f"skill {name!r} already has {relative!r}; use action 'update' to change it")
            atomic_write(directory / relative, content)
        log.info("skills.file_written", skill=name, file=relative, chars=len(content))
        return self.view(name, relative)

    def delete(self, name: str) -> Path:
        """Move the skill to `.trash/` (recoverable by an operator); return where it went."""
        directory = self._dir(name)
        with self._lock():
            if not (directory / SKILL_FILE).is_file():
                raise SkillError(f"no skill named {name!r}; nothing to delete")
            trash = self.root / TRASH_DIR
            trash.mkdir(exist_ok=True)
            target = trash / f"{name}-{int(self._clock() * 1000)}"
            os.replace(directory, target)
        log.info("skills.deleted", skill=name, moved_to=str(target))
        return target
