"""The `skill_view` and `skill_manage` agent tools over a `SkillLibrary`.

Owns the two OpenAI schemas and the JSON results. Every refusal (bad name,
missing skill, size limit, security scan) comes back as `success: false` with
an error that tells the model what to do; nothing raises into the loop.

Skills are global: every chat loads them. So `skill_manage` passes the same
write-approval gate as notes (`memory.write_approval`, and the stricter
`memory.untrusted_writes` for a write of untrusted origin: a group member who is
not an admin, a turn that read tool output). A held create, update or delete is
checked and scanned now, then waits in the chat's approval queue
(`chorus memory pending|approve`, the dashboard's staged writes) until an
operator applies it.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

import structlog

from agent.memory import NotesStore
from agent.memory.approval import Action, effective_mode, gate
from agent.messages import ToolSchema
from agent.skills import (
    MAX_NAME_CHARS,
    MAX_SKILL_CHARS,
    SKILL_FILE,
    SUPPORT_DIRS,
    SkillBlocked,
    SkillDocument,
    SkillError,
    SkillLibrary,
)
from agent.tools.base import ToolContext, ok, refused

log = structlog.get_logger(__name__)

ACTIONS = ("create", "update", "delete")
_FILE_HELP = f"optional: '{SKILL_FILE}' (default) or a supporting file {', '.join(d + '/<name>' for d in SUPPORT_DIRS)}"

VIEW_SCHEMA = ToolSchema(
    name="skill_view",
    description=(
        "Read a skill (a reusable procedure saved earlier). Without a name, lists the skills with their "
        "descriptions."
    ),
    parameters={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "the skill's name, e.g. 'deploy-checklist'"},
            "file": {"type": "string", "description": _FILE_HELP},
        },
        "required": ["name"],
    },
)

MANAGE_SCHEMA = ToolSchema(
    name="skill_manage",
    description=(
        "Create, update or delete a skill: a reusable procedure in Markdown (start with a front matter line "
        "'description: …'). Save procedures that worked, corrections the user made and lessons learned."
    ),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "name": {
                "type": "string",
                "description": f"lowercase letters, digits and hyphens, at most {MAX_NAME_CHARS} characters",
            },
            "content": {
                "type": "string",
                "description": f"the full new text for create/update (at most {MAX_SKILL_CHARS:,} characters)",
            },
            "file": {"type": "string", "description": _FILE_HELP},
        },
        "required": ["action", "name"],
    },
)


def _document(doc: SkillDocument) -> dict[str, Any]:
    return {"name": doc.name, "file": doc.file, "content": doc.content, "files": list(doc.files)}


def _text(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) else None


class SkillViewTool:
    """`skill_view(name, file?)`."""

    schema = VIEW_SCHEMA

    def __init__(self, library: SkillLibrary) -> None:
        self._library = library

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        name = _text(arguments, "name")
        try:
            if not name:
                skills = await asyncio.to_thread(self._library.list_skills)
                return ok(skills=[{"name": s.name, "description": s.description, "files": list(s.files)} for s in skills])
            doc = await asyncio.to_thread(self._library.view, name, _text(arguments, "file"))
        except SkillError as exc:
            return refused(str(exc))
        return ok(**_document(doc))


# As the approval queue names them.
_VERB_ACTION: Final[dict[str, Action]] = {"create": "add", "update": "replace", "delete": "remove"}


class SkillManageTool:
    """`skill_manage(action, name, content, file?)`; content is security-scanned before any write.

    Args:
        library: the skills.
        staging: the notes store whose approval settings and per-chat queue hold gated writes (None: no gate,
            every write applies at once, as for an operator's own tooling).
    """

    schema = MANAGE_SCHEMA

    def __init__(self, library: SkillLibrary, *, staging: NotesStore | None = None) -> None:
        self._library = library
        self._staging = staging

    def _held(self, action: str, name: str, content: str | None, file: str | None,
              context: ToolContext) -> str | None:
        """The tool's answer when the gate stages or refuses this write; None when it applies now."""
        if self._staging is None:
            return None
        settings = self._staging.settings
        mode = effective_mode(settings.write_approval, settings.untrusted_writes, context.untrusted)
        decision = gate(mode, "add")  # a skill's delete is held too: every chat loads skills
        if decision == "write":
            return None
        key = "write_approval" if mode == settings.write_approval else "untrusted_writes"
        if decision == "refuse":
            why = f" for a write of untrusted origin ({context.untrusted})" if key == "untrusted_writes" else ""
            return refused(f"Skills are read-only here{why} (memory.{key}: block); nothing was changed.",
                           reason="blocked")
        self._library.check(action, name, content, file=file)
        notes = self._staging.chat(context.chat_id)
        result = notes.stage_skill(_VERB_ACTION[action], name, content or "", file=file,
                                   origin=context.untrusted if key == "untrusted_writes" else None)
        if not result.ok:
            return refused(result.message, reason=result.refusal)
        assert result.pending is not None
        log.info("skill_manage.staged", chat_id=context.chat_id, action=action, skill=name,
                 pending_id=result.pending.id, origin=result.pending.origin)
        return ok(action=action, name=name, status="staged", pending_id=result.pending.id, message=result.message)

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        action, name = arguments.get("action"), _text(arguments, "name") or ""
        content, file = _text(arguments, "content"), _text(arguments, "file")
        if action not in ACTIONS:
            return refused(f"'action' must be one of {', '.join(ACTIONS)}; got {action!r}")
        try:
            held = await asyncio.to_thread(self._held, action, name, content, file, context)
            if held is not None:
                return held
            if action == "delete":
                await asyncio.to_thread(self._library.delete, name)
                return ok(action="delete", name=name)
            if content is None:
                return refused(f"'{action}' needs 'content': the full text of the skill")
            write = self._library.create if action == "create" else self._library.update
            doc = await asyncio.to_thread(write, name, content, file=file)
        except SkillBlocked as exc:
            log.warning("skill_manage.blocked", chat_id=context.chat_id, skill=name, verdict=exc.verdict.describe())
            return refused(str(exc), blocked=True)
        except SkillError as exc:
            return refused(str(exc))
        log.info("skill_manage.done", chat_id=context.chat_id, action=action, skill=name, file=doc.file)
        return ok(action=action, name=doc.name, file=doc.file, chars=len(doc.content))
