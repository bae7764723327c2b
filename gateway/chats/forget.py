"""`/forget TEXT`: remove the notes that contain TEXT, within what the sender may touch.

Owns `forget_notes`. In a DM: the chat's MEMORY and USER notes. In a group: the
sender's own USER notes (`participants.user_notes_scope`), and the chat's MEMORY
notes only for a bot admin; a member never removes another member's notes.
Matching is case-insensitive on the entry's text. Synchronous (small file I/O):
callers run it in a thread. Knows nothing of sessions.
"""
from __future__ import annotations

from agent.memory import NotesStore, Target
from gateway.chats.participants import user_notes_scope
from gateway.i18n import Phrase, msgid, say, say_n
from gateway.intake.routing import Route

MIN_CHARS = 3  # "/forget a" would match nearly every note


def _remove_matching(notes: NotesStore, scope: str, target: Target, text: str) -> int:
    chat = notes.chat(scope)
    wanted = text.casefold()
    removed = 0
    for entry in chat.snapshot().entries(target):
        if wanted in entry.text.casefold() and chat.remove(target, entry.text).ok:
            removed += 1
    return removed


def forget_notes(notes: NotesStore, route: Route, user_id: str, text: str, *, admin: bool,
                 language: str) -> Phrase:
    """Remove the matching notes the sender may remove; one short line saying how many."""
    text = text.strip()
    if len(text) < MIN_CHARS:
        return say(language, "forget.usage")
    own = user_notes_scope(route, user_id)
    if own is None:  # a DM: the chat's notes are the sender's own
        targets: tuple[Target, ...] = ("memory", "user")
        removed = sum(_remove_matching(notes, route.chat_scope, target, text) for target in targets)
        where = msgid("forget.where.notes")
    else:
        removed = _remove_matching(notes, own, "user", text)
        where = msgid("forget.where.yours")
        if admin:
            removed += _remove_matching(notes, route.chat_scope, "memory", text)
            where = msgid("forget.where.both")
    if removed == 0:
        return say(language, "forget.nothing", where=say(language, where), text=text)
    return say_n(language, "forget.done", removed, where=say(language, where))


__all__ = ["forget_notes"]
