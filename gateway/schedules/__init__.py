"""Scheduled and proactive messages (issue 35; docs/design.md "Scheduled jobs")."""
