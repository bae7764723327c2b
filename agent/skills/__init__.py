"""Skills: reusable procedures the agent writes and reads, one directory per skill under `<home>/skills/`.

Public API: `SkillLibrary` and its values and errors (see `agent.skills.library`).
"""
from __future__ import annotations

from agent.skills._storage import DirectorySkills
from agent.skills.library import (
    MAX_NAME_CHARS,
    MAX_SKILL_CHARS,
    MAX_SUPPORT_FILE_CHARS,
    SKILL_FILE,
    SUPPORT_DIRS,
    Scanner,
    SkillBlocked,
    SkillDocument,
    SkillError,
    SkillInfo,
    SkillLibrary,
    validate_name,
)

SKILLS_DIRNAME = "skills"

__all__ = [
    "DirectorySkills",
    "MAX_NAME_CHARS",
    "MAX_SKILL_CHARS",
    "MAX_SUPPORT_FILE_CHARS",
    "SKILLS_DIRNAME",
    "SKILL_FILE",
    "SUPPORT_DIRS",
    "Scanner",
    "SkillBlocked",
    "SkillDocument",
    "SkillError",
    "SkillInfo",
    "SkillLibrary",
    "validate_name",
]
