"""The `skill_view` and `skill_manage` agent tools over a `SkillLibrary`.

Owns the two OpenAI schemas and the JSON results. Every refusal (bad name,
missing skill, size limit, security scan) comes back as `success: false` with
an error that tells the model what to do; nothing raises into the loop.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import structlog

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


class SkillManageTool:
    """`skill_manage(action, name, content, file?)`; content is security-scanned before any write."""

    schema = MANAGE_SCHEMA

    def __init__(self, library: SkillLibrary) -> None:
        self._library = library

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        action, name = arguments.get("action"), _text(arguments, "name") or ""
        content, file = _text(arguments, "content"), _text(arguments, "file")
        if action not in ACTIONS:
            return refused(f"'action' must be one of {', '.join(ACTIONS)}; got {action!r}")
        try:
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
