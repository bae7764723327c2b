"""How one inbound message reads in the model's history: who said it, what it quoted, what it edited.

Owns the text of a user line (docs/design.md "How a group message becomes a
request"). In a shared group session every line starts with its sender's
display name and platform id (`Alice (id 777): …`), so the model can tell two
Alices apart; the compressor reads that prefix as the speaker (`nick: text`).
A line the bot was not asked to answer (observed chatter) starts with
`OBSERVED_LABEL`, so it never reads as a request to the bot. A quote (the
replied-to message, or the part of it the user selected) comes once, labelled
with its author, before the user's own text. An edit that arrives after its
turn started is a new line marked `[edited]` with the earlier text. Pure
functions of the message; knows nothing of sessions or platforms.
"""
from __future__ import annotations

from adapters.base import InboundMessage, Quote

OBSERVED_LABEL = "(not addressed to you)"
EDITED_LABEL = "[edited]"
MAX_QUOTE_CHARS = 1_000
# The bot's own earlier message is in the history already: a reply to it needs only enough to say which one.
MAX_OWN_QUOTE_CHARS = 200
MAX_PREVIOUS_CHARS = 500


def sender(message: InboundMessage) -> str:
    """`Name (id 123)`: the display name for the reader, the platform id to tell namesakes apart."""
    return f"{message.user_name} (id {message.user_id})"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def quote_line(quote: Quote, *, shared: bool, ours: bool = False) -> str:
    """The quote as one labelled line: whose message it is (`ours`: the bot's own), a selected part or not, its text."""
    part = "part of " if quote.partial else ""
    if ours:
        return f'(replying to {part}your message: "{_cut(quote.text, MAX_OWN_QUOTE_CHARS)}")'
    who = f"{quote.author_name} (id {quote.author_id})" if shared and quote.author_id else quote.author_name
    return f'(replying to {part}a message by {who}: "{_cut(quote.text, MAX_QUOTE_CHARS)}")'


def is_ours(message: InboundMessage) -> bool:
    """The quote is of the bot's own message (already in the history: a short reminder is enough)."""
    return message.replies_to_bot and message.quote is not None and message.quote.author_is_bot


def body(message: InboundMessage, text: str, *, shared: bool) -> str:
    """The message's own text with its quote before it and, for a late edit, the earlier text after it."""
    lines = []
    if message.quote is not None:
        lines.append(quote_line(message.quote, shared=shared, ours=is_ours(message)))
    if message.edited:
        earlier = message.previous_text
        lines.append(f"{EDITED_LABEL} {text}")
        lines.append(f'(earlier: "{_cut(earlier, MAX_PREVIOUS_CHARS)}")' if earlier else "(the earlier text is not known)")
    else:
        lines.append(text)
    return "\n".join(line for line in lines if line)


def prefix(message: InboundMessage, *, shared: bool, observed: bool = False) -> str:
    """What goes before the body: the observed label, and the sender in a shared session."""
    head = f"{OBSERVED_LABEL} " if observed else ""
    return f"{head}{sender(message)}: " if shared else head


def render(message: InboundMessage, text: str, *, shared: bool, observed: bool = False) -> str:
    """The whole user line as the model reads it."""
    return prefix(message, shared=shared, observed=observed) + body(message, text, shared=shared)


__all__ = ["EDITED_LABEL", "OBSERVED_LABEL", "body", "is_ours", "prefix", "quote_line", "render", "sender"]
