"""Skill writes held in a chat's approval queue: what the model is told, and applying one an operator approved.

Owns `staged_skill_message` and `apply_staged_skill`. A skill is global (every chat loads it), so a
`skill_manage` create, update or delete whose provenance is untrusted (a group member who is not an
admin, a turn that read tool output) goes through the same gate and queue as notes
(`agent.memory.approval`); an approved one is applied through the `SkillWriter` (the skill library),
which checks the name and limits and runs the skill scan again. Knows nothing of tools or files.
"""
from __future__ import annotations

from typing import Final

import structlog

from agent.memory.approval import SKILL_VERBS, PendingWrite, SkillWriter
from chorus_errors import ChorusError

log = structlog.get_logger(__name__)

ORIGINS: Final = {"tool_output": "this turn processed tool output",
                  "group_member": "written in a group by someone who is not an admin"}


def staged_skill_message(item: PendingWrite) -> str:
    """What the model (and through it the user) is told about a skill write that waits."""
    why = (f"untrusted origin: {ORIGINS.get(item.origin, item.origin)}; memory.untrusted_writes: stage"
           if item.origin else "memory.write_approval: stage")
    verb = SKILL_VERBS[item.action]
    return f"Held for operator approval as {item.id} ({why}); the {verb} of skill {item.skill!r} is not applied yet."


def apply_staged_skill(skills: SkillWriter | None, item: PendingWrite) -> str | None:
    """Apply an approved skill write; None on success, else why it was refused (the item stays pending)."""
    if skills is None or item.skill is None:
        return "skills cannot be changed from here (no skill library was given to this notes store)"
    try:
        if item.action == "remove":
            skills.delete(item.skill)
        elif item.action == "add":
            skills.create(item.skill, item.content, file=item.file)
        else:
            skills.update(item.skill, item.content, file=item.file)
    except ChorusError as exc:  # SkillError / SkillBlocked: the library says what was wrong
        log.warning("memory.staged_skill_refused", pending_id=item.id, skill=item.skill, error=str(exc)[:200])
        return str(exc)
    log.info("memory.staged_skill_applied", pending_id=item.id, skill=item.skill, action=SKILL_VERBS[item.action])
    return None


__all__ = ["ORIGINS", "apply_staged_skill", "staged_skill_message"]
