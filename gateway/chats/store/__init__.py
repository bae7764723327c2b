"""Per-chat settings and usage that outlive sessions: the `ChatStore` Protocol, its SQLite and PostgreSQL backends."""
from gateway.chats.store.base import ChatRecord, ChatStore, Usage
from gateway.chats.store.sqlite import CHATS_DB_NAME, SqliteChatStore

__all__ = ["CHATS_DB_NAME", "ChatRecord", "ChatStore", "SqliteChatStore", "Usage"]
