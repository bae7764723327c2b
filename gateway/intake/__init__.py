"""Intake: from an adapter's queue to a decision and a session lane.

Owns access (`allowlist`), routing to a session key (`routing`), trigger rules (`triggers`), chat-command
parsing (`commands`), the decision for each inbound message (`decide`), the inbound journal that makes an
accepted message survive a crash (`journal`), the quarantine of a message intake could not handle
(`deadletter`), the per-session lanes that run one job at a time (`queueing`) and the one-poller-per-token
lease (`poller`).
Knows nothing of agents, models or the compressor: a decision names a session and a kind of job, no more.
"""
