"""Per-chat notes: MEMORY.md (the agent's notes) and USER.md (who the user is), docs/design.md §4.1.

Owns `NotesStore` (one per home), `ChatNotes` (one chat's notes), the frozen
`NotesSnapshot` injected into the system prompt, and `WriteResult`, the
decision of every write as a value. Every write is validated, scanned
(`scanner.scan`), checked against the char limit, passed through the approval
gate, then written atomically under the chat's cross-process lock. Every load
re-scans entries (a hit becomes a placeholder in the prompt, stays visible via
`snapshot().memory`/`.user` for removal) and checks for drift.

The API is synchronous and does small blocking file I/O: async callers run it
in a thread (`asyncio.to_thread`). Knows nothing of tools, the CLI or models.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Literal

import structlog

from agent.memory._files import (
    SEPARATOR,
    Clock,
    DriftGuard,
    DriftReport,
    backups,
    parse_entries,
    render_entries,
)
from agent.memory._paths import CHAT_ID_FILENAME, MEMORIES_DIRNAME, ChatIdError, chat_directory, chat_dirname
from agent.memory._storage import ChatFiles, DirectoryFiles
from agent.memory.approval import (
    PENDING_FILENAME,
    Action,
    PendingQueue,
    PendingTarget,
    PendingWrite,
    SkillWriter,
    Target,
    effective_mode,
    gate,
)
from agent.memory.scanner import ScanVerdict, scan
from agent.memory.skill_staging import apply_staged_skill, staged_skill_message
from agent.settings import MemorySettings
from agent.storable import storable

FILENAMES: Final[dict[Target, str]] = {"memory": "MEMORY.md", "user": "USER.md"}
HEADERS: Final[dict[Target, str]] = {"memory": "MEMORY (your personal notes)", "user": "USER PROFILE (who the user is)"}
LABELS: Final[dict[Target, str]] = {"memory": "Memory", "user": "User profile"}
NUDGE_RATIO: Final = 0.80
PREVIEW_CHARS: Final = 80
TARGETS: Final[tuple[Target, ...]] = ("memory", "user")

Outcome = Literal["written", "unchanged", "staged", "refused"]
Refusal = Literal["scan", "capacity", "no_match", "ambiguous", "invalid", "blocked", "disabled", "queue_full", "not_found"]
log = structlog.get_logger(__name__)

__all__ = [
    "ChatIdError", "ChatNotes", "Entry", "NotesSnapshot", "NotesStore", "Usage", "WriteResult", "FILENAMES", "HEADERS",
]


@dataclass(frozen=True, slots=True)
class Usage:
    """How full one notes file is."""

    chars: int
    limit: int
    entries: int

    @property
    def percent(self) -> int:
        return int(self.chars * 100 / self.limit) if self.limit else 0

    def describe(self) -> str:
        return f"{self.chars:,}/{self.limit:,} chars ({self.percent}%), {self.entries} entries"


_NO_USAGE: Final = Usage(0, 0, 0)  # a skill write's result: notes files are not involved


@dataclass(frozen=True, slots=True)
class Entry:
    """One note entry as stored, with the verdict of the scan on load."""

    text: str
    verdict: ScanVerdict

    @property
    def flagged(self) -> bool:
        return not self.verdict.ok


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The decision and effect of one write (add / replace / remove / approve / reject)."""

    outcome: Outcome
    target: PendingTarget  # "skill": a staged skill write (its usage is empty)
    message: str
    usage: Usage
    refusal: Refusal | None = None
    verdict: ScanVerdict | None = None
    candidates: tuple[str, ...] = ()
    pending: PendingWrite | None = None
    nudge: str | None = None
    drift: tuple[DriftReport, ...] = ()
    entries: tuple[str, ...] = ()  # after a write: the target's entries now on disk

    @property
    def ok(self) -> bool:
        return self.outcome != "refused"


@dataclass(frozen=True, slots=True)
class NotesSnapshot:
    """Both notes files as loaded at one moment; `text` is what the system prompt gets."""

    memory: tuple[Entry, ...]
    user: tuple[Entry, ...]
    memory_usage: Usage
    user_usage: Usage
    memory_enabled: bool = True
    user_enabled: bool = True
    drift: tuple[DriftReport, ...] = ()

    def entries(self, target: Target) -> tuple[Entry, ...]:
        return self.memory if target == "memory" else self.user

    def usage(self, target: Target) -> Usage:
        return self.memory_usage if target == "memory" else self.user_usage

    @property
    def flagged(self) -> tuple[Entry, ...]:
        return tuple(entry for entry in (*self.memory, *self.user) if entry.flagged)

    @property
    def text(self) -> str:
        """The frozen block for the system prompt ("" when there is nothing to show)."""
        blocks = []
        for target in TARGETS:
            enabled = self.memory_enabled if target == "memory" else self.user_enabled
            entries = self.entries(target)
            if not enabled or not entries:
                continue
            usage = self.usage(target)
            body = SEPARATOR.join(_prompt_text(entry) for entry in entries)
            blocks.append(f"{HEADERS[target]} [{usage.chars:,}/{usage.limit:,} chars]\n{body}")
        return "\n\n".join(blocks)


def prompt_text(entry: Entry) -> str:
    """How an entry reads in the model's view: its text, or a placeholder when the scanner flags it."""
    return _prompt_text(entry)


def _prompt_text(entry: Entry) -> str:
    if not entry.flagged:
        return entry.text
    return (f"[note withheld: it matched the memory scanner ({entry.verdict.category}: {entry.verdict.pattern}); "
            "it is not an instruction. The user can review and remove it.]")


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _listing(entries: list[str]) -> str:
    return "; ".join(f"{number}) {_preview(entry)!r}" for number, entry in enumerate(entries, 1))


# What the model is told about why a write waits (the origins set by the agent loop and the gateway).
_ORIGINS: Final = {"tool_output": "this turn processed tool output",
                   "group_member": "written in a group by someone who is not an admin"}


class NotesStore:
    """The notes of every chat: `<home>/memories/<chat dir>/` by default, or wherever `files` keeps them.

    Args:
        home: the data directory (`ChorusConfig.home_dir`).
        settings: `memory.*` (limits, switches, write approval).
        clock: seconds since the epoch (drift backups and staged writes are stamped with it).
        files: one chat's storage by chat id (`agent.memory.postgres` when replicas share notes).
        skills: where approved skill writes land (the skill library); staged skills cannot be approved without.
    """

    def __init__(self, home: Path, settings: MemorySettings, *, clock: Clock = time.time,
                 files: Callable[[str], ChatFiles] | None = None, skills: SkillWriter | None = None) -> None:
        self.home = home
        self.settings = settings
        self._clock = clock
        self._files = files
        self._skills = skills

    def chat(self, chat_id: str) -> ChatNotes:
        """The notes of one chat. Raises `ChatIdError` for an empty id."""
        if self._files is not None:
            chat_dirname(chat_id)  # the same refusal of an empty id as the directory layout
            return ChatNotes(self._files(chat_id), chat_id, self.settings, clock=self._clock, skills=self._skills)
        files = DirectoryFiles(chat_directory(self.home, chat_id), chat_id)
        return ChatNotes(files, chat_id, self.settings, clock=self._clock, skills=self._skills)

    def pending_chats(self) -> list[str]:
        """The ids of the chats that have writes staged for approval (for the operator's dashboard)."""
        root = self.home / MEMORIES_DIRNAME
        if not root.is_dir():
            return []
        found: list[str] = []
        for directory in sorted(root.iterdir()):
            if (directory / PENDING_FILENAME).is_file():
                try:
                    found.append((directory / CHAT_ID_FILENAME).read_bytes().decode("utf-8", "surrogatepass"))
                except (OSError, UnicodeDecodeError):
                    continue  # not a chat directory (or a torn marker): nothing to show
        return found


class ChatNotes:
    """One chat's MEMORY.md and USER.md. Construct through `NotesStore.chat`."""

    def __init__(self, files: ChatFiles, chat_id: str, settings: MemorySettings, *, clock: Clock = time.time,
                 skills: SkillWriter | None = None) -> None:
        self.files = files
        self.chat_id = chat_id
        self.settings = settings
        self._clock = clock
        self._skills = skills
        self._guard = DriftGuard(files, clock=clock)
        self._queue = PendingQueue(files)

    @property
    def directory(self) -> Path:
        """The chat's notes directory, for the file layout (operators and tests edit files there)."""
        if not isinstance(self.files, DirectoryFiles):
            raise TypeError(f"the notes of this chat are not files; they live in {self.files.location}")
        return self.files.directory

    # -- reading ---------------------------------------------------------------------------------
    def snapshot(self) -> NotesSnapshot:
        """Load both files (re-scanning every entry and checking drift), e.g. at session start."""
        if not self.files.exists():  # nothing saved yet: do not create a directory just to look
            return NotesSnapshot((), (), self._usage("memory", []), self._usage("user", []),
                                 memory_enabled=self.settings.memory_enabled,
                                 user_enabled=self.settings.user_profile_enabled)
        with self._locked():
            drift: list[DriftReport] = []
            loaded = {target: self._load(target, drift) for target in TARGETS}
        entries = {target: tuple(Entry(text, scan(text)) for text in texts) for target, texts in loaded.items()}
        for entry in (*entries["memory"], *entries["user"]):
            if entry.flagged:
                log.warning("memory.entry_flagged", chat_dir=self.files.label, verdict=entry.verdict.describe())
        return NotesSnapshot(
            memory=entries["memory"], user=entries["user"],
            memory_usage=self._usage("memory", loaded["memory"]), user_usage=self._usage("user", loaded["user"]),
            memory_enabled=self.settings.memory_enabled, user_enabled=self.settings.user_profile_enabled,
            drift=tuple(drift),
        )

    def pending(self) -> list[PendingWrite]:
        """Writes staged for approval (`memory.write_approval: stage`)."""
        if not self.files.exists():
            return []
        with self._locked():
            return self._queue.items()

    # -- writing ---------------------------------------------------------------------------------
    def add(self, target: Target, content: str, *, untrusted: str | None = None,
            screened: ScanVerdict | None = None) -> WriteResult:
        """Add one entry. `untrusted` names why its provenance is untrusted (`memory.untrusted_writes` applies);
        `screened` is a refusal already reached for `content` (the `memory.llm_screen` model), used instead of the scan."""
        return self._write("add", target, content=content, old_text=None, untrusted=untrusted, screened=screened)

    def replace(self, target: Target, old_text: str, content: str, *, untrusted: str | None = None,
                screened: ScanVerdict | None = None) -> WriteResult:
        """Replace the one entry containing `old_text` with `content` (`untrusted`, `screened` as for `add`)."""
        return self._write("replace", target, content=content, old_text=old_text, untrusted=untrusted,
                           screened=screened)

    def remove(self, target: Target, old_text: str) -> WriteResult:
        """Remove the one entry containing `old_text` (never held for approval)."""
        return self._write("remove", target, content=None, old_text=old_text)

    def approve(self, pending_id: str) -> WriteResult:
        """Apply a staged write through every check again; it stays pending if a check refuses it."""
        with self._locked():
            item = next((item for item in self._queue.items() if item.id == pending_id.strip()), None)
            if item is None:
                return self._refuse("memory", "not_found", f"No staged write with id {pending_id!r}.")
            if item.target == "skill":
                result = self._approve_skill(item)
            else:
                result = self._write(item.action, item.target, content=item.content, old_text=item.old_text,
                                     staged=True)
            if result.ok:
                self._queue.pop(item.id)
            return replace(result, pending=item)

    def reject(self, pending_id: str) -> WriteResult:
        """Discard a staged write."""
        with self._locked():
            item = self._queue.pop(pending_id)
            if item is None:
                return self._refuse("memory", "not_found", f"No staged write with id {pending_id!r}.")
            if item.target == "skill":
                return WriteResult("unchanged", "skill", f"Rejected staged write {item.id}.", _NO_USAGE, pending=item)
            usage = self._usage(item.target, parse_entries(self.files.read(FILENAMES[item.target]) or ""))
            return WriteResult("unchanged", item.target, f"Rejected staged write {item.id}.", usage, pending=item)

    def stage_skill(self, action: Action, skill: str, content: str, *, file: str | None = None,
                    origin: str | None = None) -> WriteResult:
        """Hold a skill create (add), update (replace) or delete (remove) in this chat's queue for an operator."""
        with self._locked():
            item = self._queue.add(action=action, target="skill", content=content, old_text=None, now=self._clock(),
                                   origin=origin, skill=skill, file=file)
        if item is None:
            return WriteResult("refused", "skill", "Too many writes are waiting for approval; nothing was staged.",
                               _NO_USAGE, refusal="queue_full")
        log.info("memory.skill_staged", chat_dir=self.files.label, pending_id=item.id, action=action, skill=skill,
                 origin=origin)
        return WriteResult("staged", "skill", staged_skill_message(item), _NO_USAGE, pending=item)

    def _approve_skill(self, item: PendingWrite) -> WriteResult:
        problem = apply_staged_skill(self._skills, item)
        if problem is not None:
            return WriteResult("refused", "skill", f"Staged skill write {item.id} was not applied: {problem}",
                               _NO_USAGE, refusal="invalid")
        return WriteResult("written", "skill", f"Applied staged skill write {item.id} ({item.describe()}).", _NO_USAGE)

    def reset(self, target: Target | None = None) -> int:
        """Forget: delete the notes of one target (or both), their drift backups and staged writes.

        Returns:
            how many files were deleted.
        """
        if not self.files.exists():
            return 0
        if target is None:
            count = self.files.clear()
            log.info("memory.reset", chat_dir=self.files.label, target="all", files=count)
            return count
        with self._locked():
            present = set(self.files.names())
            doomed = [FILENAMES[target], *backups(self.files, FILENAMES[target])]
            count = sum(1 for name in doomed if name in present)
            for name in doomed:
                self.files.delete(name)
            self._queue.drop_target(target)
            self._guard.record(FILENAMES[target], None)
        log.info("memory.reset", chat_dir=self.files.label, target=target, files=count)
        return count

    # -- internals -------------------------------------------------------------------------------
    def _locked(self) -> AbstractContextManager[None]:
        return self.files.locked()

    def _limit(self, target: Target) -> int:
        return self.settings.memory_char_limit if target == "memory" else self.settings.user_char_limit

    def _enabled(self, target: Target) -> bool:
        return self.settings.memory_enabled if target == "memory" else self.settings.user_profile_enabled

    def _usage(self, target: Target, entries: list[str]) -> Usage:
        return Usage(len(render_entries(entries)), self._limit(target), len(entries))

    def _load(self, target: Target, drift: list[DriftReport]) -> list[str]:
        text = self.files.read(FILENAMES[target])
        report = self._guard.check(FILENAMES[target], text)
        if report is not None:
            drift.append(report)
        # As a write stores them: an entry written before (a NUL in a file) matches an `old_text` cleaned alike.
        return [storable(entry) for entry in parse_entries(text or "")]

    def _refuse(self, target: Target, refusal: Refusal, message: str, *, entries: list[str] | None = None,
                verdict: ScanVerdict | None = None, candidates: tuple[str, ...] = (),
                drift: tuple[DriftReport, ...] = ()) -> WriteResult:
        usage = self._usage(target, entries or [])
        return WriteResult("refused", target, message, usage, refusal=refusal, verdict=verdict, candidates=candidates,
                           drift=drift)

    def _validate(self, action: Action, target: Target, content: str | None, old_text: str | None,
                  screened: ScanVerdict | None = None) -> WriteResult | None:
        if target not in TARGETS:
            return self._refuse("memory", "invalid", f"Unknown target {target!r}: use 'memory' or 'user'.")
        if not self._enabled(target):
            key = "memory_enabled" if target == "memory" else "user_profile_enabled"
            return self._refuse(target, "disabled", f"{LABELS[target]} notes are turned off (memory.{key}: false).")
        if action != "add" and not (old_text or "").strip():
            return self._refuse(target, "invalid", f"'{action}' needs old_text: a substring of the entry to {action}.")
        if action != "remove":
            if not (content or "").strip():
                return self._refuse(target, "invalid", f"'{action}' needs content: the text of the entry.")
            size, limit = len((content or "").strip()), self._limit(target)
            if size > limit:  # checked before the scan: nothing this long can be stored anyway
                return self._refuse(target, "capacity", f"This entry alone ({size:,} chars) is longer than the whole "
                                    f"{LABELS[target].lower()} limit ({limit:,} chars). Shorten it to the durable facts.")
            if len(parse_entries(content or "")) != 1:
                return self._refuse(target, "invalid", "content must be one entry: a line holding only '§' separates entries.")
            verdict = screened if screened is not None and not screened.ok else scan(content or "")
            if not verdict.ok:
                log.warning("memory.write_blocked", chat_dir=self.files.label, verdict=verdict.describe())
                return self._refuse(target, "scan", f"Refused by the memory scanner: {verdict.describe()}. "
                                    "Notes must not hold instructions, secrets or hidden characters.", verdict=verdict)
        return None

    def _write(self, action: Action, target: Target, *, content: str | None, old_text: str | None,
               staged: bool = False, untrusted: str | None = None, screened: ScanVerdict | None = None) -> WriteResult:
        invalid = self._validate(action, target, content, old_text, screened)
        if invalid is not None:
            return invalid
        new_text = storable((content or "").strip())  # scanned as sent (above), stored as every backend can hold it
        with self._locked():
            drift: list[DriftReport] = []
            entries = self._load(target, drift)
            planned = self._plan(action, target, entries, new_text, storable((old_text or "").strip()))
            if isinstance(planned, WriteResult):
                return replace(planned, drift=tuple(drift))
            mode = effective_mode(self.settings.write_approval, self.settings.untrusted_writes, untrusted)
            decision = "write" if staged else gate(mode, action)
            key = "write_approval" if mode == self.settings.write_approval else "untrusted_writes"
            if decision == "refuse":
                why = f" for a write of untrusted origin ({untrusted})" if key == "untrusted_writes" else ""
                return self._refuse(target, "blocked", f"Notes are read-only here{why} (memory.{key}: block); "
                                    "nothing was saved.", entries=entries, drift=tuple(drift))
            if decision == "stage":
                return self._stage(action, target, new_text, old_text, entries, drift,
                                   origin=untrusted if key == "untrusted_writes" else None)
            text = render_entries(planned)
            self.files.write(FILENAMES[target], text + "\n" if text else "")
            self._guard.record(FILENAMES[target], text + "\n" if text else "")
        return self._written(action, target, planned, drift)

    def _stage(self, action: Action, target: Target, content: str, old_text: str | None, entries: list[str],
               drift: list[DriftReport], *, origin: str | None = None) -> WriteResult:
        item = self._queue.add(action=action, target=target, content=content, old_text=old_text, now=self._clock(),
                               origin=origin)
        if item is None:
            return self._refuse(target, "queue_full", "Too many writes are waiting for approval; nothing was staged.",
                                entries=entries, drift=tuple(drift))
        log.info("memory.write_staged", chat_dir=self.files.label, pending_id=item.id, action=action, target=target,
                 origin=origin)
        usage = self._usage(target, entries)
        why = (f"untrusted origin: {_ORIGINS.get(origin, origin)}; memory.untrusted_writes: stage" if origin
               else "memory.write_approval: stage")
        message = f"Held for operator approval as {item.id} ({why}); not saved yet."
        return WriteResult("staged", target, message, usage, pending=item, drift=tuple(drift))

    def _written(self, action: Action, target: Target, entries: list[str], drift: list[DriftReport]) -> WriteResult:
        usage = self._usage(target, entries)
        verb = {"add": "Added", "replace": "Replaced", "remove": "Removed"}[action]
        nudge = None
        if usage.chars > usage.limit * NUDGE_RATIO:
            nudge = (f"{LABELS[target]} is {usage.percent}% full: consolidate soon — merge related entries with "
                     "'replace' and 'remove' stale ones.")
        log.info("memory.written", chat_dir=self.files.label, action=action, target=target, chars=usage.chars)
        message = f"{verb}. {LABELS[target]} now at {usage.describe()}."
        return WriteResult("written", target, message, usage, nudge=nudge, drift=tuple(drift), entries=tuple(entries))

    def _plan(self, action: Action, target: Target, entries: list[str], content: str,
              old_text: str) -> list[str] | WriteResult:
        limit, label = self._limit(target), LABELS[target]
        current = len(render_entries(entries))
        if action == "add":
            if content in entries:
                return WriteResult("unchanged", target, "This entry is already saved; nothing changed.",
                                   self._usage(target, entries))
            planned = [*entries, content]
            if len(render_entries(planned)) > limit:
                return self._refuse(target, "capacity", (
                    f"{label} at {current:,}/{limit:,} chars. Adding this entry ({len(content):,} chars) would exceed "
                    f"the limit. Consolidate now: use 'replace' to merge overlapping entries into one shorter entry, "
                    f"or 'remove' entries that no longer matter, then add again."), entries=entries)
            return planned
        matches = [index for index, entry in enumerate(entries) if old_text in entry]
        if not matches:
            listing = _listing(entries) if entries else "there are none"
            return self._refuse(target, "no_match", f"No {target} entry contains {old_text!r}. Entries: {listing}.",
                                entries=entries)
        if len({entries[index] for index in matches}) > 1:
            found = [entries[index] for index in matches]
            return self._refuse(target, "ambiguous", (
                f"{old_text!r} matches {len(found)} {target} entries; use a longer substring found in only one. "
                f"Candidates: {_listing(found)}."), entries=entries, candidates=tuple(found))
        index = matches[0]
        if action == "remove":
            return entries[:index] + entries[index + 1:]
        planned = entries[:index] + [content] + entries[index + 1:]
        if len(render_entries(planned)) > limit:
            return self._refuse(target, "capacity", (
                f"{label} at {current:,}/{limit:,} chars. Replacing that entry with this text ({len(content):,} chars) "
                f"would bring it to {len(render_entries(planned)):,} chars, over the limit. Consolidate now: shorten the "
                f"text, or 'remove' entries that no longer matter first."), entries=entries)
        return planned
