"""Delivery: what leaves the gateway for a chat.

Owns replies through the outbox, streaming previews, typing and edit throttling (`outbound`), in-chat
progress notices (`notices`), tool-call notices (`tool_progress`), the one edited "queued (N)" notice per
busy spell (`queued`) and the outbox journal that survives a restart (`outbox_file`).
Knows nothing of sessions or agents: it sends text to a `ChatTarget` through a `PlatformAdapter`.
"""
