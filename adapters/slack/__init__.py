"""Slack adapter: Events API over HTTP (signed requests) or Socket Mode, through slack-bolt's AsyncApp.

Exports `SlackAdapter` (a `PlatformAdapter`), `SlackIdentity`, the message
limit and the mrkdwn conversion. Imports only slack-bolt/slack_sdk, aiohttp
and `adapters.base`/`adapters.text`; never `gateway/` or `agent/`.
"""
from __future__ import annotations

from ._mrkdwn import from_slack, to_mrkdwn
from .adapter import DEFAULT_EVENTS_PATH, SLACK_MESSAGE_CHARS, SlackAdapter, SlackIdentity

__all__ = [
    "DEFAULT_EVENTS_PATH",
    "SLACK_MESSAGE_CHARS",
    "SlackAdapter",
    "SlackIdentity",
    "from_slack",
    "to_mrkdwn",
]
