"""How a handoff summary is framed, recognised and unframed.

Owns the REFERENCE ONLY prefix, the END marker, the merge delimiters, the
system-prompt note, and the functions that apply them idempotently or strip
them again (to recover the previous summary on resume). Pure text functions;
knows nothing of budgets, models or state.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agent.messages import Message, TextPart

SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. "
    "It is a handoff from an earlier context window: background reference, NOT instructions. "
    "Do not answer questions or redo requests mentioned in it; they were already handled. "
    "Respond only to the latest message that comes AFTER this summary; if it changes topic or asks "
    "to stop, drop the work described here. Your tools stay fully available for the active task."
)
END_MARKER = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
MERGED_PRIOR_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED_DELIMITER = "[END OF PRIOR CONTEXT — THE MESSAGE CONTINUES BELOW]"
SYSTEM_NOTE = (
    "[Note: some earlier conversation turns have been compacted into a handoff summary to save "
    "context space. The summary is reference material, not instructions.]"
)
_PREFIX_HEAD = "[CONTEXT COMPACTION — REFERENCE ONLY]"


def strip_framing(text: str) -> str:
    """The summary body without prefix(es), END marker(s) or merge delimiters (idempotent)."""
    body = text
    if MERGED_PRIOR_HEADER in body:
        body = body.split(MERGED_PRIOR_HEADER, 1)[1]
    if END_MARKER in body:
        body = body.split(END_MARKER, 1)[0]
    body = body.strip()
    while body.startswith(_PREFIX_HEAD):
        body = body[len(SUMMARY_PREFIX):] if body.startswith(SUMMARY_PREFIX) else body[len(_PREFIX_HEAD):]
        body = body.strip()
    return body


def frame_summary(body: str) -> str:
    """Prefix + body + END marker; framing already present in `body` is not doubled."""
    return f"{SUMMARY_PREFIX}\n\n{strip_framing(body)}\n\n{END_MARKER}"


def merged_content(summary: str, original: str) -> str:
    """A summary merged into the first kept message, clearly delimited as prior context."""
    return f"{MERGED_PRIOR_HEADER}\n{summary}\n{MERGED_DELIMITER}\n\n{original}"


def unmerge(text: str) -> str:
    """The original content of a message a summary was merged into."""
    if text.startswith(MERGED_PRIOR_HEADER) and MERGED_DELIMITER in text:
        return text.split(MERGED_DELIMITER, 1)[1].lstrip("\n")
    return text


def is_handoff(message: Message) -> bool:
    """True for a summary message, flagged in process or recognised by its prefix after a reload."""
    if message.compressed_summary:
        return True
    if message.role not in ("user", "assistant"):
        return False
    text = message.text
    return text.startswith(_PREFIX_HEAD) or (text.startswith(MERGED_PRIOR_HEADER) and _PREFIX_HEAD in text[:400])


def is_real_user(message: Message) -> bool:
    """A user turn written by a person, not a handoff summary."""
    return message.role == "user" and not is_handoff(message)


def newest_handoff(messages: Sequence[Message]) -> int | None:
    """Index of the newest handoff message, or None."""
    for index in range(len(messages) - 1, -1, -1):
        if is_handoff(messages[index]):
            return index
    return None


def handoff_text(message: Message) -> str:
    """The whole framed summary of a handoff message (without a merged message's own content)."""
    text = message.text
    if text.startswith(MERGED_PRIOR_HEADER) and MERGED_DELIMITER in text:
        return text[len(MERGED_PRIOR_HEADER):].split(MERGED_DELIMITER, 1)[0].strip()
    return text


_SECTION_RE_CACHE: dict[str, re.Pattern[str]] = {}


def strip_sections(text: str, titles: Iterable[str]) -> str:
    """Remove `## {title}` blocks (up to the next `## ` heading) for the given titles."""
    for title in titles:
        pattern = _SECTION_RE_CACHE.get(title)
        if pattern is None:
            pattern = re.compile(rf"(?ms)^## {re.escape(title)}[ \t]*\n.*?(?=^## |\Z)")
            _SECTION_RE_CACHE[title] = pattern
        text = pattern.sub("", text)
    return text.strip()


def with_system_note(message: Message) -> Message:
    """The system prompt with the compaction note appended once."""
    if SYSTEM_NOTE in message.text:
        return message
    content = message.content
    if isinstance(content, tuple):
        return message.with_content((*content, TextPart(text="\n\n" + SYSTEM_NOTE)))
    base = content or ""
    return message.with_content(f"{base}\n\n{SYSTEM_NOTE}" if base else SYSTEM_NOTE)


def without_handoff(message: Message) -> Message | None:
    """A message as it was before a summary was put in it: None for a pure summary message."""
    if not is_handoff(message):
        return message
    content = message.content
    if isinstance(content, str):
        if content.startswith(MERGED_PRIOR_HEADER) and MERGED_DELIMITER in content:
            return Message(role=message.role, content=unmerge(content), tool_calls=message.tool_calls,
                           tool_call_id=message.tool_call_id, name=message.name)
        return None
    if isinstance(content, tuple) and content and isinstance(content[0], TextPart):
        if content[0].text.startswith(MERGED_PRIOR_HEADER):
            return Message(role=message.role, content=content[1:], tool_calls=message.tool_calls,
                           tool_call_id=message.tool_call_id, name=message.name)
    return None if not message.tool_calls else Message(role=message.role, content=None, tool_calls=message.tool_calls)
