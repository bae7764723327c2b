"""`/approve ID` and `/deny ID`, typed or pressed: the answer, and where it is shown.

Owns `ApprovalDesk` (what the command handlers reach through `CommandHost.approvals`). A refusal (someone else's approval, an unknown id) goes to
the presser alone when the answer came from a button; a decision is said in the
chat, so everyone sees who approved what.
"""
from __future__ import annotations

from adapters.base import InboundMessage
from gateway.approvals.posting import DeliveryPoster
from gateway.approvals.service import Approvals
from gateway.i18n import NOTHING, Phrase, say


class ApprovalDesk:
    """Answers `/approve` and `/deny` for the gateway's `Approvals`, privately where a button was pressed."""

    def __init__(self, approvals: Approvals, poster: DeliveryPoster) -> None:
        self.approvals = approvals
        self._poster = poster

    async def answer(self, message: InboundMessage, chat_scope: str, *, approve: bool, args: str,
                     language: str) -> Phrase:
        """The reply to post in the chat (empty when the answer went to the presser alone)."""
        approval_id = args.split()[0] if args.split() else ""
        if not approval_id:
            return say(language, "approval.usage")
        answer = await self.approvals.answer(approval_id, approve=approve, chat_scope=chat_scope, platform=message.platform,
                                             sender_id=message.user_id, sender_name=message.user_name, language=language)
        if message.interaction is None:
            return answer.text
        if answer.private and await self._poster.answer_press(message, answer.text):
            return NOTHING
        await self._poster.answer_press(message, NOTHING)  # stops the button's spinner; the decision is said in the chat
        return answer.text


__all__ = ["ApprovalDesk"]
