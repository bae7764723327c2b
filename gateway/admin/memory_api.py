"""Staged note writes on the admin API: list them, approve or reject one (the dashboard's "Staged notes").

Owns `memory_routes`. Under `/api/`, so the admin token guards them like every operator route. Every
decision goes through `ChatNotes.approve` / `reject`, the same checks as `chorus memory approve|reject`
(an approved write is scanned and limit-checked again).

    GET  /api/memory/pending                          {"pending": [{chat, id, action, target, content, …}]}
    POST /api/memory/pending/{id}/approve?chat=CHAT   {"ok", "outcome", "message"}
    POST /api/memory/pending/{id}/reject?chat=CHAT
"""
from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Any

import structlog
from aiohttp import web

from agent.memory import ChatIdError, NotesStore, WriteResult

log = structlog.get_logger(__name__)


def _listing(store: NotesStore) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for chat_id in store.pending_chats():
        rows += [{"chat": chat_id, **asdict(item)} for item in store.chat(chat_id).pending()]
    return rows


def memory_routes(store: NotesStore) -> list[web.RouteDef]:
    """The staged-writes routes over `store`."""

    async def pending(_request: web.Request) -> web.Response:
        return web.json_response({"pending": await asyncio.to_thread(_listing, store)})

    async def decide(request: web.Request) -> web.Response:
        chat_id = request.query.get("chat", "")
        item_id = request.match_info["id"]
        verdict = request.match_info["verdict"]
        if not chat_id:
            return web.json_response({"error": "chat: missing; add ?chat=PLATFORM:CHAT_ID"}, status=400)
        try:
            notes = store.chat(chat_id)
        except ChatIdError as exc:
            return web.json_response({"error": f"chat: {exc}"}, status=400)
        decision = notes.approve if verdict == "approve" else notes.reject
        result: WriteResult = await asyncio.to_thread(decision, item_id)
        log.info("admin.memory_decision", verdict=verdict, pending_id=item_id, outcome=result.outcome,
                 refusal=result.refusal)
        status = 404 if result.refusal == "not_found" else 200
        return web.json_response({"ok": result.ok, "outcome": result.outcome, "message": result.message},
                                 status=status)

    return [web.get("/api/memory/pending", pending),
            web.post("/api/memory/pending/{id}/{verdict:approve|reject}", decide)]


__all__ = ["memory_routes"]
