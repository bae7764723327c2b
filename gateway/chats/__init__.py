"""Chats: what the gateway knows about each chat beyond its sessions.

Owns the running config's view of a chat — persona, model, mention rule, admins (`policy`), the per-chat store
of the model a chat switched to and its all-time usage (`store/`, SQLite behind `ChatStore`; small SQLite files
open through `sqlite_file`), pairing of unknown DM senders (`pairing`) and which MCP tools a chat may use
(`tool_access`).
Knows nothing of platform SDKs or of how a turn runs.
"""
