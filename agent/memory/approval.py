"""The write-approval gate of notes (`memory.write_approval`): allow, stage, or block.

Owns `ApprovalMode`, `gate` (the decision, as a value) and `PendingQueue`, the
staged writes of one chat in `<chat dir>/pending.json`. Staged writes were
already scanned when they were proposed; they are scanned again, and checked
against the limits again, when approved. Knows nothing of tools or the CLI.

Removals of notes are never held back: forgetting something cannot poison a
prompt, and a user's request to forget must not wait for an operator. Skills
share the gate and the queue (target "skill": add = create, replace = update,
remove = delete, of the skill `skill`, file `file`): they are global, loaded
by every chat, so a skill's removal is held back like any other write
(`gate(mode, "add")` for every skill action).
"""
from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Final, Literal, Protocol

if TYPE_CHECKING:
    from agent.memory._storage import ChatFiles

ApprovalMode = Literal["allow", "stage", "block"]
Action = Literal["add", "replace", "remove"]
Target = Literal["memory", "user"]
PendingTarget = Literal["memory", "user", "skill"]
Gate = Literal["write", "stage", "refuse"]
PENDING_FILENAME: Final = "pending.json"
MAX_PENDING: Final = 50  # a runaway agent cannot fill the disk with proposals
SKILL_VERBS: Final = {"add": "create", "replace": "update", "remove": "delete"}


class SkillWriter(Protocol):
    """Where an approved skill write lands (`agent.skills.SkillLibrary`): each call checks and scans again,
    and raises a `ChorusError` saying what was wrong."""

    def create(self, name: str, content: str, *, file: str | None = None) -> object: ...

    def update(self, name: str, content: str, *, file: str | None = None) -> object: ...

    def delete(self, name: str) -> object: ...


_STRICTNESS: Final = {"allow": 0, "stage": 1, "block": 2}


def effective_mode(write_approval: ApprovalMode, untrusted_writes: ApprovalMode, untrusted: str | None) -> ApprovalMode:
    """The mode for one write: `write_approval`, or the stricter `untrusted_writes` when it is untrusted."""
    if untrusted is None:
        return write_approval
    return max(write_approval, untrusted_writes, key=_STRICTNESS.__getitem__)


def gate(mode: ApprovalMode, action: Action) -> Gate:
    """What to do with a write under `mode`: write now, stage it, or refuse it."""
    if action == "remove" or mode == "allow":
        return "write"
    if mode == "stage":
        return "stage"
    return "refuse"


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A write held for an operator's decision.

    Attributes:
        id: short random id shown to the operator (`chorus memory approve ID`).
        action: "add" or "replace".
        target: "memory" or "user".
        content: the new entry text.
        old_text: for "replace", the substring that finds the entry to replace.
        created_at: seconds since the epoch.
        origin: why it was staged when its provenance was untrusted ("tool_output", "group_member"), else None.
        skill: for target "skill", the skill's name; file: its supporting file (None: SKILL.md).
    """

    id: str
    action: Action
    target: PendingTarget
    content: str
    old_text: str | None
    created_at: float
    origin: str | None = None
    skill: str | None = None
    file: str | None = None

    def describe(self) -> str:
        why = f"  [untrusted: {self.origin}]" if self.origin else ""
        if self.target == "skill":
            where = f"{self.skill}/{self.file}" if self.file else f"{self.skill}"
            text = f": {self.content!r}" if self.action != "remove" else ""
            return f"{self.id}  {SKILL_VERBS[self.action]} skill {where}{text}{why}"
        if self.action == "replace":
            return f"{self.id}  replace in {self.target}: {self.old_text!r} -> {self.content!r}{why}"
        return f"{self.id}  add to {self.target}: {self.content!r}{why}"


class PendingQueue:
    """The staged writes of one chat. Call every method under the chat's lock."""

    def __init__(self, files: ChatFiles) -> None:
        self._files = files

    def items(self) -> list[PendingWrite]:
        try:
            raw = json.loads(self._files.read(PENDING_FILENAME) or "{}")
        except ValueError:
            return []
        items = raw.get("pending") if isinstance(raw, dict) else None
        if not isinstance(items, list):
            return []
        return [item for item in (self._parse(entry) for entry in items) if item is not None]

    def add(self, *, action: Action, target: PendingTarget, content: str, old_text: str | None, now: float,
            origin: str | None = None, skill: str | None = None, file: str | None = None) -> PendingWrite | None:
        """Stage a write; None when the queue is full."""
        items = self.items()
        if len(items) >= MAX_PENDING:
            return None
        taken = {item.id for item in items}
        new_id = secrets.token_hex(3)
        while new_id in taken:
            new_id = secrets.token_hex(3)
        item = PendingWrite(id=new_id, action=action, target=target, content=content, old_text=old_text, created_at=now,
                            origin=origin, skill=skill, file=file)
        self._save([*items, item])
        return item

    def pop(self, item_id: str) -> PendingWrite | None:
        """Remove and return the staged write `item_id`, or None when there is none."""
        items = self.items()
        found = next((item for item in items if item.id == item_id.strip()), None)
        if found is not None:
            self._save([item for item in items if item.id != found.id])
        return found

    def drop_target(self, target: PendingTarget | None) -> None:
        """Discard staged writes of one target (None: all)."""
        self._save([item for item in self.items() if target is not None and item.target != target])

    def _save(self, items: list[PendingWrite]) -> None:
        if not items:
            self._files.delete(PENDING_FILENAME)
            return
        self._files.write(PENDING_FILENAME, json.dumps({"pending": [asdict(item) for item in items]}, ensure_ascii=False, indent=1))

    @staticmethod
    def _parse(raw: object) -> PendingWrite | None:
        if not isinstance(raw, dict):
            return None
        action, target = raw.get("action"), raw.get("target")
        content, old_text = raw.get("content"), raw.get("old_text")
        skill, file = raw.get("skill"), raw.get("file")
        if target == "skill":
            if action not in SKILL_VERBS or not isinstance(skill, str) or not isinstance(content, str):
                return None
        elif action not in ("add", "replace") or target not in ("memory", "user") or not isinstance(content, str):
            return None
        return PendingWrite(
            id=str(raw.get("id", "")),
            action=action,
            target=target,
            content=content,
            old_text=old_text if isinstance(old_text, str) else None,
            created_at=float(raw.get("created_at", 0.0)),
            origin=raw["origin"] if isinstance(raw.get("origin"), str) else None,
            skill=skill if isinstance(skill, str) else None,
            file=file if isinstance(file, str) else None,
        )
