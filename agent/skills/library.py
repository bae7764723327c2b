"""Skills on disk: `<home>/skills/<name>/SKILL.md` plus optional `references/`, `templates/`, `scripts/`.

Owns name and path validation, size limits, the security scan before every
write, atomic writes under a cross-process lock, and listing. A deleted skill
is moved to `.trash/` rather than erased, so a bad `delete` loses nothing.
Knows nothing of tools, chats or prompts; the scanner is injected.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

import structlog

from agent.skills._storage import SKILL_FILE as SKILL_FILE
from agent.skills._storage import SUPPORT_DIRS as SUPPORT_DIRS
from agent.skills._storage import DirectorySkills, SkillStorage
from agent.storable import storable
from chorus_errors import ChorusError

log = structlog.get_logger(__name__)

MAX_NAME_CHARS: Final = 64
MAX_SKILL_CHARS: Final = 20_000
MAX_SUPPORT_FILE_CHARS: Final = 50_000
MAX_DESCRIPTION_CHARS: Final = 200
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
    """The skills of one home directory (or of a shared `storage`).

    Args:
        root: `<home>/skills`.
        scanner: the security scan run on every text before it is written.
        clock: seconds since the epoch, for trash names.
        storage: where the texts live (default: directories under `root`).
    """

    def __init__(self, root: Path, *, scanner: Scanner, clock: Callable[[], float] = time.time,
                 storage: SkillStorage | None = None) -> None:
        self.root = root
        self._scanner = scanner
        self._clock = clock
        self._storage = storage or DirectorySkills(root)

    def exists(self, name: str) -> bool:
        return self._storage.read(validate_name(name), SKILL_FILE) is not None

    def list_skills(self) -> list[SkillInfo]:
        """Every valid skill, by name."""
        skills = []
        for name in self._storage.skill_names():
            content = self._storage.read(name, SKILL_FILE)
            if content is not None:
                skills.append(SkillInfo(name, describe(content), len(content), self._storage.files(name)))
        return skills

    def view(self, name: str, file: str | None = None) -> SkillDocument:
        """Read SKILL.md (or one supporting file) of a skill."""
        name = validate_name(name)
        relative = SKILL_FILE if file in (None, "", SKILL_FILE) else validate_file(str(file))
        if self._storage.read(name, SKILL_FILE) is None:
            raise SkillError(f"no skill named {name!r}; known skills: {', '.join(s.name for s in self.list_skills()) or 'none'}")
        content = self._storage.read(name, relative)
        files = self._storage.files(name)
        if content is None:
            raise SkillError(f"skill {name!r} has no file {relative!r}; its files: {', '.join(files) or 'none'}")
        return SkillDocument(name, relative, content, files)

    def _checked(self, name: str, relative: str, content: str) -> str:
        """`content` as it is stored (`storable`), once within the limits and past the scan; else raises."""
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
        return storable(content)

    def check(self, action: str, name: str, content: str | None, *, file: str | None = None) -> None:
        """Raise what `create` / `update` / `delete` would (name, file, limits, the scan, whether the skill
        exists), without writing: a write held for approval is refused at once if it could never apply."""
        name = validate_name(name)
        present = self._storage.read(name, SKILL_FILE) is not None
        if action == "delete":
            if not present:
                raise SkillError(f"no skill named {name!r}; nothing to delete")
            return
        relative = SKILL_FILE if file in (None, "", SKILL_FILE) else validate_file(str(file))
        self._checked(name, relative, content or "")
        if relative != SKILL_FILE:
            if not present:
                raise SkillError(f"no skill named {name!r}; create its {SKILL_FILE} first")
            exists = self._storage.read(name, relative) is not None
        else:
            exists = present
        if action == "create" and exists:
            raise SkillError(f"skill {name!r} already has {relative!r}; use action 'update' to change it")
        if action == "update" and not exists:
            raise SkillError(f"skill {name!r} has no {relative!r}; use action 'create' to make it")

    def create(self, name: str, content: str, *, file: str | None = None) -> SkillDocument:
        """Create a new skill's SKILL.md, or add a supporting file to an existing skill."""
        name = validate_name(name)
        if file not in (None, "", SKILL_FILE):
            return self._write_support(name, validate_file(str(file)), content, must_exist=False)
        content = self._checked(name, SKILL_FILE, content)
        with self._storage.locked():
            if self._storage.read(name, SKILL_FILE) is not None:
                raise SkillError(f"skill {name!r} already exists; use action 'update' to change it")
            self._storage.write(name, SKILL_FILE, content)
        log.info("skills.created", skill=name, chars=len(content))
        return self.view(name)

    def update(self, name: str, content: str, *, file: str | None = None) -> SkillDocument:
        """Replace the SKILL.md (or a supporting file) of an existing skill."""
        name = validate_name(name)
        if file not in (None, "", SKILL_FILE):
            return self._write_support(name, validate_file(str(file)), content, must_exist=True)
        content = self._checked(name, SKILL_FILE, content)
        with self._storage.locked():
            if self._storage.read(name, SKILL_FILE) is None:
                raise SkillError(f"no skill named {name!r}; use action 'create' to make it")
            self._storage.write(name, SKILL_FILE, content)
        log.info("skills.updated", skill=name, chars=len(content))
        return self.view(name)

    def _write_support(self, name: str, relative: str, content: str, *, must_exist: bool) -> SkillDocument:
        content = self._checked(name, relative, content)
        with self._storage.locked():
            if self._storage.read(name, SKILL_FILE) is None:
                raise SkillError(f"no skill named {name!r}; create its {SKILL_FILE} first")
            present = self._storage.read(name, relative) is not None
            if must_exist and not present:
                raise SkillError(f"skill {name!r} has no file {relative!r}; use action 'create' to add it")
            if not must_exist and present:
                raise SkillError(f"skill {name!r} already has {relative!r}; use action 'update' to change it")
            self._storage.write(name, relative, content)
        log.info("skills.file_written", skill=name, file=relative, chars=len(content))
        return self.view(name, relative)

    def delete(self, name: str) -> str:
        """Move the skill to the trash (recoverable by an operator); return where it went."""
        name = validate_name(name)
        with self._storage.locked():
            if self._storage.read(name, SKILL_FILE) is None:
                raise SkillError(f"no skill named {name!r}; nothing to delete")
            target = self._storage.trash(name, int(self._clock() * 1000))
        log.info("skills.deleted", skill=name, moved_to=target)
        return target
