"""Which tool calls need a person's yes, and who may give it: `tools.approval`, per chat `chats."…".approval`.

Owns `ApprovalRule` (the settings in force for one chat) and `may_answer`. Pure:
reads the config it is handed, knows nothing of stores or platforms.
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from gateway.config import ApprovalSettings, ChorusConfig
from gateway.i18n import Phrase, as_is, msgid, say

_APPROVERS = {
    "requester": msgid("approval.approvers.requester"),
    "admins": msgid("approval.approvers.admins"),
    "requester_or_admins": msgid("approval.approvers.requester_or_admins"),
}


def approvers_text(language: str, approvers: str) -> Phrase:
    """Who may answer (`tools.approval.approvers`), in words."""
    key = _APPROVERS.get(approvers)
    return say(language, key) if key is not None else as_is(approvers)


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    required: tuple[str, ...]
    approvers: str
    timeout_seconds: float
    source: str  # the config key it came from

    def needs_approval(self, tool: str) -> bool:
        """True when `tool` (a public name such as `tickets__create`) matches a name or glob of `required`."""
        return any(fnmatchcase(tool, pattern) for pattern in self.required)


def approval_rule(config: ChorusConfig, chat_scope: str) -> ApprovalRule:
    """The approval settings in force in `chat_scope` (PLATFORM:CHAT_ID)."""
    chat = config.chats.get(chat_scope)
    if chat is not None and chat.approval is not None:
        return _rule(chat.approval, f"chats.{chat_scope}.approval")
    return _rule(config.tools.approval, "tools.approval")


def _rule(settings: ApprovalSettings, source: str) -> ApprovalRule:
    return ApprovalRule(tuple(settings.required), settings.approvers, settings.timeout_seconds, source)


def may_answer(approvers: str, *, requester_id: str, sender_id: str, sender_is_admin: bool) -> bool:
    """Whether the sender may approve or deny a call asked for by `requester_id` under `approvers`."""
    if approvers == "requester":
        return sender_id == requester_id
    if approvers == "admins":
        return sender_is_admin
    return sender_id == requester_id or sender_is_admin


__all__ = ["approvers_text", "ApprovalRule", "approval_rule", "may_answer"]
