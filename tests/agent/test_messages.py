"""Wire conversion of chat messages."""
from __future__ import annotations

import json

import pytest

from agent.messages import ImagePart, Message, from_wire, messages_from_wire, to_wire
from chorus_errors import MessageFormatError
from tests.conftest import DATA_DIR


def test_real_sessions_round_trip_unchanged() -> None:
    """Every real recorded message converts to a value and back to the same wire dict."""
    for path in DATA_DIR.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            raw = json.loads(line)["messages"]
            back = [to_wire(m) for m in messages_from_wire(raw)]
            expected = [{"content": None, **m} for m in raw]
            assert back == expected


def test_metadata_never_reaches_the_wire() -> None:
    """In-process summary flags are not serialised."""
    message = Message(role="user", content="s", compressed_summary=True, summary_has_user_turn=True)
    assert to_wire(message) == {"role": "user", "content": "s"}


def test_image_parts_survive() -> None:
    """A multimodal user message keeps its image part."""
    raw = {"role": "user", "content": [{"type": "text", "text": "look"},
                                       {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    message = from_wire(raw)
    assert message.text == "look"
    assert message.images == (ImagePart(url="data:image/png;base64,AAAA"),)
    assert to_wire(message) == raw


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "tool", "content": "x"}, "tool_call_id"),
        ({"role": "user", "content": 5}, "content"),
        ({"role": "assistant", "tool_calls": [{"function": {}}]}, "tool_calls"),
    ],
)
def test_invalid_messages_name_the_field(raw: dict[str, object], field: str) -> None:
    """A malformed message is refused with the index and field that are wrong."""
    with pytest.raises(MessageFormatError) as caught:
        from_wire(raw, 7)
    assert (caught.value.index, caught.value.field) == (7, field)
    assert "message 7" in str(caught.value)
