"""Tool approvals on both backends: a yes runs a call once, a no or a timeout refuses it, a wrong person changes nothing."""
from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.base import ChatTarget
from agent.messages import ToolCall
from agent.store.postgres import PostgresSessionStore
from gateway.approvals import ApprovalGate, Approvals, ApprovalStore, Asker, SqliteApprovalStore, approval_rule, may_answer
from gateway.approvals.postgres import PostgresApprovalStore
from gateway.config import parse_config
from tests.postgres import fresh_database

CHAT = "telegram:-100"
TARGET = ChatTarget("telegram", "-100")
ALICE = Asker(session_key="s1", chat_scope=CHAT, target=TARGET, user_id="1", user_name="Alice")
CALL = ToolCall(id="c1", name="tickets__close", arguments=json.dumps({"id": 7, "api_key": "sk-secret"}))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class Posts:
    """A `Poster` that keeps what it was asked to post."""

    def __init__(self) -> None:
        self.prompts: list[tuple[ChatTarget, str, str]] = []
        self.texts: list[str] = []
        self.prompted = asyncio.Event()

    async def post_prompt(self, target: ChatTarget, text: str, approval_id: str, language: str = "en") -> None:
        self.prompts.append((target, text, approval_id))
        self.prompted.set()

    async def post_text(self, target: ChatTarget, text: str) -> None:
        self.texts.append(text)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    clock = Clock()
    if request.param == "sqlite":
        yield lambda: SqliteApprovalStore(tmp_path / "approvals.db", clock=clock), clock
        return
    with fresh_database() as url:
        shared = PostgresSessionStore(url)
        shared.open()
        try:
            yield lambda: PostgresApprovalStore(shared, clock=clock), clock
        finally:
            shared.close()


def _approvals(store: ApprovalStore, clock: Clock, posts: Posts, *, approvers: str = "requester",
               timeout: float = 300, admins: frozenset[str] = frozenset({"9"})) -> Approvals:
    config = parse_config({"tools": {"approval": {"required": ["tickets__*"], "approvers": approvers,
                                                  "timeout_seconds": timeout}}})

    async def tick(seconds: float) -> None:
        clock.now += seconds  # the injected sleep moves the injected clock: waiting costs no real time
        await asyncio.sleep(0)

    return Approvals(store, config=lambda: config, poster=posts, admins=lambda _p: admins, clock=clock, sleep=tick)


@dataclass
class Rig:
    """An opened store, what was posted, the `Approvals` over them and Alice's turn gate."""

    store: ApprovalStore
    posts: Posts
    approvals: Approvals
    gate: ApprovalGate


def _rig(store_factory: tuple[object, Clock], **options: Any) -> Rig:
    make, clock = store_factory
    assert callable(make)
    store = make()
    store.open()
    posts = Posts()
    approvals = _approvals(store, clock, posts, **options)
    gate = approvals.gate(ALICE)
    assert gate is not None
    return Rig(store, posts, approvals, gate)


async def _answer_when_prompted(approvals: Approvals, posts: Posts, *, approve: bool, sender: str, name: str) -> str:
    await posts.prompted.wait()
    answer = await approvals.answer(posts.prompts[-1][2], approve=approve, chat_scope=CHAT, platform="telegram",
                                    sender_id=sender, sender_name=name, language="en")
    return answer.text


async def test_a_yes_from_the_requester_runs_the_call_once(store_factory: tuple[object, Clock]) -> None:
    """The prompt names the tool and who asked, with the secret masked; after the yes the call runs, and only once."""
    rig = _rig(store_factory)
    store, posts, approvals, gate = rig.store, rig.posts, rig.approvals, rig.gate
    verdict, said = await asyncio.gather(gate.admit(CALL),
                                         _answer_when_prompted(approvals, posts, approve=True, sender="1", name="Alice"))
    assert verdict is None
    assert said.startswith("✅ Approved by Alice: tickets__close")
    prompt = posts.prompts[0][1]
    assert "Alice asked me to run tickets__close" in prompt and "sk-secret" not in prompt
    again = approvals.gate(ALICE)
    assert again is not None
    posts.prompted.clear()
    second = asyncio.create_task(again.admit(CALL))
    await posts.prompted.wait()  # the approval was used: the same call asks again
    assert len(posts.prompts) == 2
    second.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await second
    store.close()


async def test_another_member_is_refused_and_nothing_changes(store_factory: tuple[object, Clock]) -> None:
    """Bob presses Approve on Alice's call: refused privately; the approval stays pending, then times out."""
    rig = _rig(store_factory, timeout=30)
    store, posts, approvals, gate = rig.store, rig.posts, rig.approvals, rig.gate
    waiting = asyncio.create_task(gate.admit(CALL))
    await posts.prompted.wait()
    approval_id = posts.prompts[0][2]
    answer = await approvals.answer(approval_id, approve=True, chat_scope=CHAT, platform="telegram",
                                    sender_id="2", sender_name="Bob", language="en")
    assert (answer.private, answer.text) == (True, "Only the person who asked can answer this.")
    stored = store.get(approval_id)
    assert stored is not None and stored.status == "pending"
    verdict = await waiting
    assert verdict is not None and "not approved" in json.loads(verdict)["error"]
    assert posts.texts == [f"⌛ Approval {approval_id} timed out: tickets__close was not run."]
    store.close()


async def test_a_no_refuses_and_another_chat_cannot_answer(store_factory: tuple[object, Clock]) -> None:
    """An id from another chat is not found there; the requester's no gives the model "not approved"."""
    rig = _rig(store_factory)
    store, posts, approvals, gate = rig.store, rig.posts, rig.approvals, rig.gate
    waiting = asyncio.create_task(gate.admit(CALL))
    await posts.prompted.wait()
    approval_id = posts.prompts[0][2]
    elsewhere = await approvals.answer(approval_id, approve=True, chat_scope="telegram:-200", platform="telegram",
                                       sender_id="1", sender_name="Alice", language="en")
    assert elsewhere.private and "no approval" in elsewhere.text
    denied = await approvals.answer(approval_id.upper(), approve=False, chat_scope=CHAT, platform="telegram",
                                    sender_id="1", sender_name="Alice", language="en")
    assert denied.text.startswith("❌ Denied by Alice")
    verdict = await waiting
    assert verdict is not None and json.loads(verdict)["error"].startswith("not approved: Alice said no")
    store.close()


async def test_a_replayed_turn_waits_on_the_prompt_already_posted(store_factory: tuple[object, Clock]) -> None:
    """After a restart (a new `Approvals` on the same store) the same call finds its approval: no second prompt,
    and a yes given then runs it."""
    make, clock = store_factory  # type: ignore[misc]
    first_store = make()
    first_store.open()
    posts = Posts()
    before = _approvals(first_store, clock, posts)
    gate = before.gate(ALICE)
    assert gate is not None
    interrupted = asyncio.create_task(gate.admit(CALL))
    await posts.prompted.wait()
    interrupted.cancel()  # the process dies mid-wait
    with contextlib.suppress(asyncio.CancelledError):
        await interrupted
    first_store.close()
    store = make()
    store.open()
    after_posts = Posts()
    after = _approvals(store, clock, after_posts)
    replayed = after.gate(ALICE)
    assert replayed is not None
    waiting = asyncio.create_task(replayed.admit(CALL))
    answer = await after.answer(posts.prompts[0][2], approve=True, chat_scope=CHAT, platform="telegram",
                                sender_id="1", sender_name="Alice", language="en")
    assert answer.text.startswith("✅ Approved")
    assert await waiting is None
    assert after_posts.prompts == []
    store.close()


def test_tools_outside_the_rule_and_chats_without_one_are_not_gated() -> None:
    """Globs match public tool names; a chat's own `approval` replaces the global one."""
    config = parse_config({"tools": {"approval": {"required": ["tickets__*", "deploy"]}},
                           "chats": {CHAT: {"approval": {"required": []}}}})
    rule = approval_rule(config, "telegram:-300")
    assert (rule.needs_approval("tickets__close"), rule.needs_approval("deploy"), rule.needs_approval("search")) == (
        True, True, False)
    assert approval_rule(config, CHAT).required == ()


@pytest.mark.parametrize(("approvers", "sender", "admin", "expected"), [
    ("requester", "1", False, True), ("requester", "2", True, False),
    ("admins", "1", False, False), ("admins", "2", True, True),
    ("requester_or_admins", "1", False, True), ("requester_or_admins", "2", True, True),
    ("requester_or_admins", "3", False, False),
])
def test_who_may_answer(approvers: str, sender: str, admin: bool, expected: bool) -> None:
    assert may_answer(approvers, requester_id="1", sender_id=sender, sender_is_admin=admin) is expected
