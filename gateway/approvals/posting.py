"""Where approval prompts and answers reach people: through the gateway's adapters.

Owns `DeliveryPoster` (the `Poster` the gateway gives `Approvals`) and
`choice_sender`. A prompt gets Approve/Deny buttons where the adapter is a
`ChoiceSender` (Telegram, Discord, Slack); anywhere else, or when the buttons are
refused, it is posted as text that says `/approve ID` and `/deny ID`.
"""
from __future__ import annotations

import structlog

from adapters.base import AdapterError, ChatTarget, Choice, ChoiceSender, InboundMessage, PlatformAdapter
from gateway.delivery.outbound import Delivery
from gateway.i18n import Phrase, say
from gateway.intake.poller import LeasedAdapter

log = structlog.get_logger(__name__)


def choice_sender(adapter: PlatformAdapter | None) -> ChoiceSender | None:
    """The adapter (or the one a poller lease wraps) when it can show buttons."""
    inner = adapter.inner if isinstance(adapter, LeasedAdapter) else adapter
    return inner if isinstance(inner, ChoiceSender) else None


class DeliveryPoster:
    """Posts through the gateway's `Delivery` (best effort, like every notice)."""

    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery

    async def post_prompt(self, target: ChatTarget, text: Phrase, approval_id: str, language: str) -> None:
        sender = choice_sender(self._delivery.adapter(target.platform))
        if sender is not None:
            choices = (Choice(say(language, "approval.button.approve"), f"/approve {approval_id}"),
                       Choice(say(language, "approval.button.deny"), f"/deny {approval_id}"))
            try:
                await sender.send_choices(target, text, choices)
                return
            except (AdapterError, ValueError, OSError) as exc:
                log.warning("approval.buttons_failed", platform=target.platform, error=type(exc).__name__)
        await self._delivery.send_notice(target, text)

    async def post_text(self, target: ChatTarget, text: Phrase) -> None:
        await self._delivery.send_notice(target, text)

    async def answer_press(self, message: InboundMessage, text: Phrase) -> bool:
        """Answer a button press so only the presser sees `text`; False: not a press, or it expired."""
        sender = choice_sender(self._delivery.adapter(message.platform))
        if sender is None or message.interaction is None:
            return False
        try:
            return await sender.answer_privately(message, text)
        except (AdapterError, OSError) as exc:
            log.info("approval.private_answer_failed", platform=message.platform, error=type(exc).__name__)
            return False


__all__ = ["DeliveryPoster", "choice_sender"]
