"""Which tool calls need a person's yes, and who may give it: `tools.approval`, per chat `chats."…".approval`.

Owns `ApprovalRule` (the settings in force for one chat) and `may_answer`. Pure:
reads the config it is handed, knows nothing of stores or platforms.
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from gateway.config import ApprovalSettings, ChorusConfig

APPROVER_TEXT = {
    "requester": "the person who asked",
    "admins": "a bot admin of this chat",
    "requester_or_admins": "the person who asked or a bot admin",
}


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


__all__ = ["APPROVER_TEXT", "ApprovalRule", "approval_rule", "may_answer"]
