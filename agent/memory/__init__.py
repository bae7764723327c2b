"""Memory: per-chat notes (MEMORY.md / USER.md), the security scanner, write approval.

The notes store lives in `notes.py`, the scanner in `scanner.py`, the approval
gate in `approval.py`. External memory providers (`providers.py`) sit beside
them and share only the scanner.
"""
from agent.memory._files import LOCK_FILENAME, SEPARATOR, DriftReport, parse_entries
from agent.memory._paths import CHAT_ID_FILENAME, MEMORIES_DIRNAME, ChatIdError, chat_dirname, owner_of
from agent.memory.approval import ApprovalMode, PendingWrite, Target
from agent.memory.notes import ChatNotes, Entry, NotesSnapshot, NotesStore, Usage, WriteResult
from agent.memory.scanner import ScanVerdict, scan

__all__ = [
    "CHAT_ID_FILENAME", "LOCK_FILENAME", "MEMORIES_DIRNAME", "SEPARATOR", "owner_of", "parse_entries",
    "ApprovalMode", "ChatIdError", "ChatNotes", "DriftReport", "Entry", "NotesSnapshot", "NotesStore", "PendingWrite",
    "ScanVerdict", "Target", "Usage", "WriteResult", "chat_dirname", "scan",
]
