"""Per-chat settings and usage that outlive sessions: the `ChatStore` Protocol and its SQLite backend."""
from gateway.chatstore.base import ChatRecord, ChatStore, Usage
from gateway.chatstore.sqlite import CHATS_DB_NAME, SqliteChatStore

__all__ = ["CHATS_DB_NAME", "ChatRecord", "ChatStore", "SqliteChatStore", "Usage"]
