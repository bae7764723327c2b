"""Inbound text made safe at the adapter boundary: every string an adapter hands on is valid UTF-8.

Owns `clean_text`, `clean_line`, `fix_surrogates` and `normalize_inbound`.
Platform JSON may carry what UTF-8 cannot: `"\\ud83d"` is valid JSON (a cut
emoji; the browser's `JSON.stringify` sends one), and decodes to a lone
surrogate that every later UTF-8 encode (journal, store, Redis, the model
request) rejects. So, before a message leaves an adapter:

- lone surrogates become U+FFFD (a proper pair left as two code points is
  joined into its character); U+FFFD is one UTF-16 unit like the surrogate it
  replaces, so Telegram's UTF-16 entity offsets stay right;
- NUL is dropped (SQLite and C libraries cut strings at it);
- in message text, other control characters are kept (tabs and newlines are
  content; the platforms deliver the rest as sent);
- in one-line fields (names, ids, file names, MIME types, URLs) every control
  character and line separator becomes a space, so no name can forge a log
  line or a transcript line.

Knows nothing of the gateway; imports only `adapters/base.py`.
"""
from __future__ import annotations

import dataclasses
import operator
import re

from adapters.base import Attachment, InboundMessage, Quote

NUL = "\x00"
REPLACEMENT = "\ufffd"
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_LINE_FIELDS = ("platform", "chat_id", "user_id", "user_name", "message_id", "thread_id",
                "reply_to_message_id", "delivery_id")
_LINE_VALUES = operator.attrgetter(*_LINE_FIELDS)
_ATTACHMENT_FIELDS = ("url", "name", "mime_type")


def _is_utf8_safe(text: str) -> bool:
    if text.isascii():  # O(1) in CPython: an ASCII string has no surrogates
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fix_surrogates(text: str) -> str:
    """`text` with lone surrogates as U+FFFD (length in UTF-16 units unchanged); NUL and controls untouched."""
    if _is_utf8_safe(text):
        return text
    # UTF-16 round trip: a surrogate pair becomes its character, a lone half U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_text(text: str) -> str:
    """Message text as valid UTF-8: lone surrogates → U+FFFD, NUL dropped, other controls kept."""
    text = fix_surrogates(text)
    return text.replace(NUL, "") if NUL in text else text


def clean_line(text: str) -> str:
    """A one-line field as valid UTF-8: lone surrogates → U+FFFD, NUL dropped, controls → spaces."""
    text = clean_text(text)
    if text.isprintable() or _LINE_BREAKING.search(text) is None:
        return text  # the same object: callers tell "unchanged" by identity
    return _LINE_BREAKING.sub(" ", text)


def _clean_optional(value: str | None) -> str | None:
    return clean_line(value) if isinstance(value, str) else value


def _clean_attachment(item: Attachment) -> Attachment:
    changes = {name: _clean_optional(getattr(item, name)) for name in _ATTACHMENT_FIELDS}
    if all(changes[name] is getattr(item, name) for name in _ATTACHMENT_FIELDS):
        return item
    return dataclasses.replace(item, **changes)  # type: ignore[arg-type]


def _clean_quote(quote: Quote) -> Quote:
    text, name = clean_text(quote.text), clean_line(quote.author_name)
    author_id, message_id = _clean_optional(quote.author_id), _clean_optional(quote.message_id)
    if text is quote.text and name is quote.author_name and author_id is quote.author_id and message_id is quote.message_id:
        return quote
    return dataclasses.replace(quote, text=text, author_name=name, author_id=author_id, message_id=message_id)


def _clean_already(message: InboundMessage) -> bool:
    """True when no field needs cleaning: one ASCII scan of the line fields joined, none field by field.

    Printable ASCII holds no surrogate, NUL, control or line separator, and the gateway normalises
    every message its adapter already normalised, so this is the common case.
    """
    if message.attachments or not message.text.isascii() or NUL in message.text:
        return False
    if message.quote is not None or message.previous_text is not None:
        return False  # rare: the field-by-field path
    # One C call reads the fields (not a getattr and an isinstance per field); None (an absent
    # optional field) drops out, and a value that is no string is left to the field-by-field path.
    values = [value for value in _LINE_VALUES(message) if value is not None]
    try:
        joined = "".join(values)
    except TypeError:
        return False
    return joined.isascii() and joined.isprintable()


def normalize_inbound(message: InboundMessage) -> InboundMessage:
    """`message` with every string field cleaned (the same object when nothing needed it)."""
    if _clean_already(message):
        return message
    changes: dict[str, object] = {}
    text = clean_text(message.text)
    if text is not message.text:
        changes["text"] = text
    for name in _LINE_FIELDS:
        value = getattr(message, name)
        cleaned = _clean_optional(value)
        if cleaned is not value:
            changes[name] = cleaned
    attachments = tuple(_clean_attachment(item) for item in message.attachments)
    if any(new is not old for new, old in zip(attachments, message.attachments, strict=True)):
        changes["attachments"] = attachments
    if message.quote is not None and (quote := _clean_quote(message.quote)) is not message.quote:
        changes["quote"] = quote
    if message.previous_text is not None and (earlier := clean_text(message.previous_text)) is not message.previous_text:
        changes["previous_text"] = earlier
    return dataclasses.replace(message, **changes) if changes else message  # type: ignore[arg-type]


__all__ = ["REPLACEMENT", "clean_line", "clean_text", "fix_surrogates", "normalize_inbound"]
