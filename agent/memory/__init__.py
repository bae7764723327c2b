"""Memory: per-chat notes (MEMORY.md / USER.md), the security scanner, write approval.

The notes store lives in `notes.py`, the scanner in `scanner.py`. External
memory providers (`providers.py`) sit beside them and share only the scanner.
"""
from agent.memory.scanner import ScanVerdict, scan

__all__ = ["ScanVerdict", "scan"]
