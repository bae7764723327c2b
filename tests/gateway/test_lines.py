"""`gateway.sessions.lines`: how one inbound message reads in the model's history (pure, table tests)."""
from __future__ import annotations

import pytest

from adapters.base import InboundMessage, Quote
from gateway.sessions.lines import render


def _message(**changes: object) -> InboundMessage:
    base: dict[str, object] = {"platform": "telegram", "chat_id": "-1", "chat_type": "group", "user_id": "777",
                               "user_name": "Alice", "text": "is that right?", "message_id": "9", "timestamp": 0.0}
    return InboundMessage(**{**base, **changes})  # type: ignore[arg-type]


BOB_PART = Quote(author_name="Bob", author_id="5", text="the freeze starts Thursday", partial=True)
OURS = Quote(author_name="Chorus", author_id="1", text="x" * 300, author_is_bot=True)


@pytest.mark.parametrize(
    ("message", "shared", "observed", "expected"),
    [
        (_message(), True, False, "Alice (id 777): is that right?"),
        (_message(), False, False, "is that right?"),
        (_message(), True, True, "(not addressed to you) Alice (id 777): is that right?"),
        (_message(quote=BOB_PART), True, False,
         'Alice (id 777): (replying to part of a message by Bob (id 5): "the freeze starts Thursday")\nis that right?'),
        (_message(quote=BOB_PART, chat_type="dm"), False, False,
         '(replying to part of a message by Bob: "the freeze starts Thursday")\nis that right?'),
        (_message(quote=OURS, replies_to_bot=True), False, False,
         f'(replying to your message: "{"x" * 199}…")\nis that right?'),
        (_message(edited=True, previous_text="is that wrong?"), False, False,
         '[edited] is that right?\n(earlier: "is that wrong?")'),
        (_message(edited=True), False, False, "[edited] is that right?\n(the earlier text is not known)"),
    ],
)
def test_a_line_names_its_sender_quote_and_edit(message: InboundMessage, shared: bool, observed: bool,
                                                expected: str) -> None:
    """Sender and id in shared sessions, the observed label, the quote once before the text, an edit's earlier text."""
    assert render(message, message.text, shared=shared, observed=observed) == expected
