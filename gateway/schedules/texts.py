"""The words of the scheduler that are not the bot's own: what the model reads.

The texts a person reads (listings, refusals, failure reports, home-channel notices) are in the message
catalogues under `schedule.*` (gateway/i18n); only the prompt of a scheduled turn is fixed here, because the
model reads it as the user's message, and `ScheduleRefused`'s English is what the `schedule` tool, the CLI
and the admin API answer.
"""
from __future__ import annotations

from typing import Final

TURN_PROMPT: Final = "[scheduled job {name}] {prompt}"  # the turn a job runs, as the model reads it

__all__ = ["TURN_PROMPT"]
