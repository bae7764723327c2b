"""Chat commands: parsing and the texts they answer with.

Owns `Command`, `parse_command`, the help text and the `/status` rendering.
Executing a command needs the gateway's sessions and lives in `gateway.app`;
this module knows nothing of sessions.
"""
from __future__ import annotations

from dataclasses import dataclass

COMMANDS = ("new", "reset", "compress", "status", "memory", "stop", "help", "retry", "model", "usage", "undo", "whoami",
            "forget")
# Handled at once, even while the session is busy.
IMMEDIATE = frozenset({"status", "memory", "stop", "help", "new", "reset", "model", "usage", "undo", "whoami", "forget"})
# In groups with `platforms.<p>.admins` set, only those users may run these.
ADMIN_COMMANDS = frozenset({"new", "reset", "compress", "model"})
ADMIN_ONLY_TEXT = "Only this chat's bot admins can use /{name} here."
HELP_TEXT = "\n".join(
    [
        "Commands:",
        "/new or /reset — start a new conversation (notes are kept)",
        "/compress — compress this conversation's context now",
        "/status — tokens used, compression threshold, compressions so far",
        "/memory — show what I keep in my notes for this chat",
        "/model [NAME] — show this chat's model, or switch to another allowed one",
        "/usage — tokens used by this conversation and by this chat in all",
        "/undo — remove the last exchange from this conversation",
        "/stop — stop the reply in progress",
        "/retry — run your last message again (after a failed answer)",
        "/whoami — your platform id, and whether you are an admin here",
        "/forget TEXT — remove my notes that contain TEXT (in a group: your own)",
        "/help — this list",
    ]
)


# The platforms' command menus (Telegram setMyCommands) show these, in this order.
DESCRIPTIONS: tuple[tuple[str, str], ...] = (
    ("new", "Start a new conversation (notes are kept)"),
    ("compress", "Compress this conversation's context now"),
    ("status", "Tokens used, threshold, model and prompt"),
    ("usage", "Tokens used by this conversation and chat"),
    ("model", "Show or switch this chat's model"),
    ("undo", "Remove the last exchange"),
    ("retry", "Run your last message again"),
    ("memory", "Show my notes for this chat"),
    ("stop", "Stop the reply in progress"),
    ("whoami", "Your platform id and admin status"),
    ("forget", "Remove my notes that contain a text"),
    ("help", "List the commands"),
)


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: str = ""

    @property
    def immediate(self) -> bool:
        return self.name in IMMEDIATE


def parse_command(text: str) -> Command | None:
    """`/name args` for a known command; `/name@bot` is accepted too. Anything else is None."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    name = head.split("@", 1)[0].lower()
    if name not in COMMANDS:
        return None
    return Command(name="new" if name == "reset" else name, args=rest.strip())


@dataclass(frozen=True, slots=True)
class StatusInfo:
    session_key: str
    messages: int
    tokens_used: int
    tokens_source: str  # "reported" | "estimate"
    threshold: int
    context_length: int
    compressions: int
    busy: bool
    queued: int
    blocked: bool = False
    prompt_source: str = ""
    model: str = ""
    window_note: str = ""  # set when the active model's window is not the configured one


def render_status(info: StatusInfo) -> str:
    lines = [
        f"tokens used: {info.tokens_used:,} ({info.tokens_source}) of {info.context_length:,}",
        f"compression threshold: {info.threshold:,}",
        f"compressions so far: {info.compressions}",
        f"messages in context: {info.messages}",
    ]
    if info.model:
        lines.append(f"model: {info.model}")
    if info.prompt_source:
        lines.append(f"system prompt: {info.prompt_source}")
    if info.window_note:
        lines.append(info.window_note)
    if info.blocked:
        lines.append("automatic compression is paused (anti-thrash); /compress forces one")
    if info.busy:
        lines.append(f"working on a reply; {info.queued} message(s) queued")
    return "\n".join(lines)


__all__ = ["ADMIN_COMMANDS", "ADMIN_ONLY_TEXT", "COMMANDS", "DESCRIPTIONS", "HELP_TEXT", "IMMEDIATE", "Command", "StatusInfo", "parse_command", "render_status"]
