"""Memory: per-chat notes (MEMORY.md / USER.md), the security scanner, write approval.

The notes store lives in `notes.py`, the scanner in `scanner.py`, the approval
gate in `approval.py`. External memory providers (`providers.py`) sit beside
them and share only the scanner.
"""
from agent.memory._files import DriftReport
from agent.memory._paths import ChatIdError, chat_dirname
from agent.memory.approval import ApprovalMode, PendingWrite, Target
from agent.memory.notes import ChatNotes, Entry, NotesSnapshot, NotesStore, Usage, WriteResult
from agent.memory.scanner import ScanVerdict, scan

__all__ = [
    "ApprovalMode", "ChatIdError", "ChatNotes", "DriftReport", "Entry", "NotesSnapshot", "NotesStore", "PendingWrite",
    "ScanVerdict", "Target", "Usage", "WriteResult", "chat_dirname", "scan",
]
