"""Every text the scheduler, its tool, its commands and the home channel write, in one table.

Kept together so the message catalogues (gettext) take them in one place; `{…}` fields are filled by
`str.format` where they are used.
"""
from __future__ import annotations

from typing import Final

TEXTS: Final[dict[str, str]] = {
    # the turn a job runs (what the model reads as the user's message)
    "turn": "[scheduled job {name}] {prompt}",
    # a run that failed after every retry: told in the job's chat, else the home channel
    "run_failed": "Scheduled job {name} ({id}) could not run at {time}: {error}. It tried {attempts} times.",
    # /schedules and /unschedule
    "list_empty": "No scheduled jobs in this chat.",
    "list_head": "Scheduled jobs here:",
    "list_line": "{id} · {when} · next {next} · last {last} · {what}",
    "never": "never",
    "send_prefix": "send: ",  # a deliver_only job's text in a listing
    "none": "none",
    "unschedule_usage": "Usage: /unschedule ID (the ids are listed by /schedules).",
    "unscheduled": "Removed scheduled job {id}.",
    "not_found": "There is no scheduled job {id} here.",
    "not_yours": "Only the person who made job {id} or an admin can remove it.",
    "operator_job": "Job {id} is set in the gateway's config (schedules.{id}); the operator removes it there.",
    "disabled": "Scheduling is turned off here (scheduling.enabled).",
    # the `schedule` tool's refusals (read by the model, which tells the user)
    "too_many": "This chat already has the most scheduled jobs allowed ({count}, scheduling.max_jobs_per_chat).",
    "too_often": "That schedule fires every {gap:g} minutes; the shortest allowed interval is {minimum:g} minutes.",
    "in_the_past": "That time has passed already; give a future time.",
    "no_prompt": "Give the prompt to run at that time.",
    "cancel_which": "Give the id of the job to cancel (list shows them).",
    # the home channel
    "restarted": "Back after {seconds} s; {replies} replies resumed.",
    "adapter_down": "{platform} is not receiving messages: {reason}.",
    "adapter_back": "{platform} is receiving messages again.",
    "model_failing": "The model has been failing for {minutes} minutes ({error}).",
    "model_back": "The model is answering again.",
}


def text(key: str, **fields: object) -> str:
    """The text `key` with its fields filled in."""
    return TEXTS[key].format(**fields)


__all__ = ["TEXTS", "text"]
