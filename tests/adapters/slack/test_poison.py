"""Slack's inbound path with hostile text: escaped lone surrogates, NUL, controls, deeply nested bodies."""
from __future__ import annotations

from hypothesis import given

from adapters.decisions import Accepted
from adapters.slack._events import classify
from tests.adapters.strategies import hostile_text, nested_json, strings_of, utf8_valid
from tests.fakes.slack_api import signed_headers

from .conftest import Harness


@given(text=hostile_text, user=hostile_text, file_name=hostile_text)
def test_hostile_events_become_valid_utf8(text: str, user: str, file_name: str) -> None:
    """Whatever the event carried, every string of the message is valid UTF-8 without NUL."""
    event = {"type": "message", "channel": "D1", "channel_type": "im", "user": user or "U1", "text": text,
             "ts": "1.5", "files": [{"name": file_name, "mimetype": "text/plain", "url_private": "https://f"}]}
    decision = classify(event, bot_user_id="UBOT")
    assert isinstance(decision, Accepted)
    assert all(utf8_valid(value) and "\x00" not in value for value in strings_of(decision.message))


async def test_event_with_an_escaped_lone_surrogate_is_delivered_cleaned(events: Harness) -> None:
    """An Events API body carrying "\\ud83d" is acked and delivered with U+FFFD."""
    status = await events.post_event(
        {"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "cut \ud83d\x00", "ts": "300.1"},
        event_id="EvPoison",
    )
    assert status == 200
    assert (await events.next_message()).text == "cut \ufffd"


async def test_deeply_nested_body_is_400_and_events_still_flow(events: Harness) -> None:
    """A signed body nested past the JSON parser's limit is a clean 400; the next event is delivered."""
    body = nested_json(100_000)
    status, text = await events.post_raw(body, signed_headers(body))
    assert (status, "nested too deeply" in text) == (400, True)
    ok = {"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "after", "ts": "300.2"}
    assert await events.post_event(ok, event_id="EvAfter") == 200
    assert (await events.next_message()).text == "after"
