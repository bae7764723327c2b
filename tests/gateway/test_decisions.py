"""Table tests of the pure decisions: session keys, triggers, allowlists, hygiene, command parsing."""
from __future__ import annotations

import pytest

from adapters.base import InboundMessage
from agent.messages import user
from gateway.commands.spec import Command
from gateway.commands.status import StatusInfo, render_status
from gateway.commands.table import COMMANDS
from gateway.intake.allowlist import AccessRules, RefusalLimiter, check_access
from gateway.intake.routing import route, session_key
from gateway.intake.triggers import decide_trigger
from gateway.sessions.hygiene import check_hygiene


def _msg(text: str = "hi", **fields: object) -> InboundMessage:
    base: dict[str, object] = dict(
        platform="telegram", chat_id="-100", chat_type="group", user_id="7", user_name="Ann", text=text,
        message_id="1", timestamp=0.0,
    )
    base.update(fields)
    return InboundMessage(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "per_user", "expected", "shared"),
    [
        ({"chat_type": "dm", "chat_id": "7"}, False, "agent:p:telegram:dm:7", False),
        ({}, False, "agent:p:telegram:group:-100", True),
        ({}, True, "agent:p:telegram:group:-100:7", False),
        ({"thread_id": "55"}, False, "agent:p:telegram:thread:-100:55", True),
        ({"thread_id": "55"}, True, "agent:p:telegram:thread:-100:55:7", False),
        ({"platform": "slack", "chat_id": "C1", "thread_id": "1700.1"}, False, "agent:p:slack:thread:C1:1700.1", True),
    ],
)
def test_session_keys(fields: dict[str, object], per_user: bool, expected: str, shared: bool) -> None:
    """Session keys follow agent:<profile>:<platform>:<dm|group|thread>:<chat>[:<thread>][:<user>]."""
    where = route(_msg(**fields), profile="p", group_sessions_per_user=per_user)
    assert (where.key, where.shared) == (expected, shared)


def test_colons_in_ids_cannot_forge_another_key() -> None:
    """An id containing ':' is escaped, so it never collides with a key that has an extra field."""
    forged = session_key(profile="p", platform="x", kind="group", chat_id="a:b", thread_id=None, user_id=None)
    real = session_key(profile="p", platform="x", kind="group", chat_id="a", thread_id=None, user_id="b")
    assert forged != real


@pytest.mark.parametrize(
    ("chat_id", "part"),
    [
        ("-100123", "-100123"),
        ("C0ABC_def.9", "C0ABC_def.9"),
        ("a:b", "a%3Ab"),
        ("x y/z", "x%20y%2Fz"),
        ("café", "caf%C3%A9"),
        ("", ""),
    ],
)
def test_key_parts_are_escaped_as_stored_keys_expect(chat_id: str, part: str) -> None:
    """Plain ids stand as they are and others are percent-escaped, exactly as keys already stored were built."""
    key = session_key(profile="p", platform="x", kind="dm", chat_id=chat_id, thread_id=None, user_id=None)
    assert key == f"agent:p:x:dm:{part}"


@pytest.mark.parametrize(
    ("fields", "mode", "require_mention", "record", "action"),
    [
        ({"chat_type": "dm"}, "mention", True, True, "respond"),
        ({}, "mention", True, True, "record"),
        ({}, "mention", True, False, "ignore"),
        ({"mentions_bot": True}, "mention", True, True, "respond"),
        ({"replies_to_bot": True}, "mention", True, True, "respond"),
        ({"mentions_bot": True}, "reply", True, True, "record"),
        ({"replies_to_bot": True}, "reply", True, True, "respond"),
        ({}, "always", True, True, "respond"),
        ({}, "mention", False, True, "respond"),
        ({"text": "/status"}, "mention", True, True, "command"),
        ({"text": "/status@chorus_bot"}, "mention", True, True, "command"),
        ({"text": "/unknown"}, "mention", True, True, "record"),
    ],
)
def test_trigger_rules(fields: dict[str, object], mode: str, require_mention: bool, record: bool, action: str) -> None:
    """DMs always answer; groups answer on mention, reply or command, per group_trigger and require_mention."""
    decision = decide_trigger(
        _msg(**fields), group_trigger=mode, require_mention=require_mention, record_unmentioned=record  # type: ignore[arg-type]
    )
    assert decision.action == action and decision.reason


@pytest.mark.parametrize(
    ("rules", "fields", "allowed"),
    [
        (AccessRules.of("telegram"), {}, False),
        (AccessRules.of("telegram", allowed_users=["7"]), {}, True),
        (AccessRules.of("telegram", allowed_users=["@ann"]), {"user_handle": "ann"}, True),
        # A display name is free text: a stranger calling themselves "Ann" is not @ann.
        (AccessRules.of("telegram", allowed_users=["@ann"]), {"chat_id": "-200"}, False),
        (AccessRules.of("telegram", allowed_users=["ann"]), {"chat_id": "-200", "user_name": "ann"}, False),
        (AccessRules.of("telegram", allowed_chats=["-100"]), {}, True),
        (AccessRules.of("telegram", allow_all_users=True), {}, True),
        (AccessRules.of("web"), {"platform": "web"}, True),
        (AccessRules.of("console"), {"platform": "console"}, True),
        (None, {}, False),
    ],
)
def test_allowlist_denies_by_default(rules: AccessRules | None, fields: dict[str, object], allowed: bool) -> None:
    """Only listed users or chats, allow_all_users, or a local channel are allowed."""
    decision = check_access(_msg(**fields), rules)
    assert decision.allowed == allowed and decision.reason


def test_refusals_are_rate_limited_per_user() -> None:
    """One refusal per user per interval."""
    now = [0.0]
    limiter = RefusalLimiter(interval=60, clock=lambda: now[0])
    first = [limiter.should_refuse("t", "a"), limiter.should_refuse("t", "a"), limiter.should_refuse("t", "b")]
    now[0] = 61
    assert first + [limiter.should_refuse("t", "a")] == [True, False, True, True]


@pytest.mark.parametrize(
    ("count", "reported", "stalled", "compress", "source"),
    [
        (10, 0, None, False, "estimate"),
        (10, 110_000, None, True, "reported"),  # 85% of 128,000 = 108,800
        (10, 100_000, None, False, "reported"),
        (5001, 1_000, None, True, "reported"),  # hard limit, whatever the tokens
        (5000, 1_000, None, False, "reported"),
        (6000, 0, 6000, False, "estimate"),  # the previous run made no progress
    ],
)
def test_hygiene_decision(count: int, reported: int, stalled: int | None, compress: bool, source: str) -> None:
    """85% of the window by the last real prompt_tokens (else an estimate), or past the hard message limit."""
    history = [user("short line")] * count
    decision = check_hygiene(
        history, last_prompt_tokens=reported, context_length=128_000, hard_message_limit=5000, stalled_at=stalled
    )
    assert (decision.compress, decision.source, decision.threshold) == (compress, source, 108_800)


def test_hygiene_estimate_catches_a_big_unreported_session() -> None:
    """Without a reading, a character estimate past 85% of the window compresses."""
    history = [user("x" * 4000)] * 100  # about 100,000 tokens of a 100,000 window
    decision = check_hygiene(history, last_prompt_tokens=-1, context_length=100_000, hard_message_limit=5000, stalled_at=None)
    assert (decision.compress, decision.source) == (True, "estimate")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/new", Command("new")),
        ("/reset", Command("new")),
        ("  /compress now ", Command("compress", "now")),
        ("/STATUS@bot", Command("status")),
        ("/nope", None),
        ("hello /new", None),
        ("", None),
    ],
)
def test_parse_command(text: str, expected: Command | None) -> None:
    """Known commands parse, /reset is /new, anything else is not a command."""
    assert COMMANDS.parse(text) == expected


def test_status_shows_tokens_threshold_and_compressions() -> None:
    """/status names tokens used, the threshold and the compressions so far."""
    text = render_status(StatusInfo("k", 12, 41_000, "reported", 64_000, 128_000, 2, busy=True, queued=1), "en")
    assert text.splitlines()[:3] == [
        "tokens used: 41,000 (reported) of 128,000",
        "compression threshold: 64,000",
        "compressions so far: 2",
    ]
    assert "working on a reply; 1 message queued" in text
