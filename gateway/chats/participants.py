"""Whose notes: in a group, USER notes are each participant's own; MEMORY notes are the chat's.

Owns `user_notes_scope` (the notes scope of one participant's USER notes in a
group chat: `<platform:chat>:user:<user id>`; in a DM the chat's own scope) and
`participant_notes` (the text of those notes, shown to the model for the
sender's turn only, since a shared group session's prompt is frozen for all).
A DM's notes live under the DM's scope and are never read for a group.
Knows nothing of sessions.
"""
from __future__ import annotations

from agent.memory import NotesStore
from gateway.intake.routing import Route

PARTICIPANT_HEADER = "USER PROFILE of the person asking now ({name})"


def user_notes_scope(route: Route, user_id: str) -> str | None:
    """The scope the sender's USER notes live in: their own in a group, None (the chat's) in a DM."""
    if route.kind == "dm":
        return None
    return f"{route.chat_scope}:user:{user_id}"


def participant_notes(notes: NotesStore, route: Route, user_id: str, name: str) -> str | None:
    """The sender's own USER notes in a group, headed for the model; None when there are none (or in a DM)."""
    scope = user_notes_scope(route, user_id)
    if scope is None:
        return None
    entries = [entry for entry in notes.chat(scope).snapshot().entries("user") if not entry.flagged]
    if not entries:
        return None
    lines = "\n".join(f"- {entry.text}" for entry in entries)
    return f"{PARTICIPANT_HEADER.format(name=name)}:\n{lines}"


__all__ = ["PARTICIPANT_HEADER", "participant_notes", "user_notes_scope"]
