"""Scheduled and proactive messages (issue 35; docs/design.md §2.7), fired once across replicas.

Modules: `recurrence` (cron and `at` timing), `jobs` (the values), `store` / `postgres` (jobs, runs and the
per-occurrence claim), `runner` (`Scheduler`: the loop, catch-up, hand-over), `book` (the rules every entry
point shares), `tool` (the agent's `schedule`), `desk` (`/schedules`, `/unschedule`), `home` (the home
channel), `texts` (every text). Import from those modules: `gateway.config` imports `recurrence` to check a
job's timing at load, so this package's `__init__` imports nothing that imports the config back.
"""
from gateway.schedules.recurrence import When, WhenError

__all__ = ["When", "WhenError"]
