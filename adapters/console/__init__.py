"""The console adapter: chat with the gateway in a terminal (stdin lines in, replies on stdout)."""
from __future__ import annotations

from adapters.console.adapter import CONSOLE_LIMITS, ConsoleAdapter

__all__ = ["CONSOLE_LIMITS", "ConsoleAdapter"]
