"""Text translation between the model's Markdown and Slack's mrkdwn, both ways.

Owns `to_mrkdwn` (outbound: Markdown → mrkdwn, `&<>` escaped), `split_mrkdwn`
(outbound chunks that stay under the limit *after* conversion) and
`from_slack` (inbound: mentions, links and entities → plain text). Pure
functions; knows nothing of the Slack API, sessions or the gateway.
"""
from __future__ import annotations

import re

from adapters.fences import blocks, break_backtick_runs
from adapters.text import split_text

_INLINE_CODE = re.compile(r"`[^`\n]+`")
_PLACEHOLDER = "\x00{}\x00"
_PLACEHOLDER_RE = re.compile("\x00(\\d+)\x00")
_LINK = re.compile(r"\[([^\]\n]+)\]\((\S+?)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+", re.MULTILINE)
# One pass, left to right, so the `*x*` produced for bold is never re-read as italics.
_EMPHASIS = re.compile(
    r"\*\*(?P<b1>[^\n]+?)\*\*"
    r"|__(?P<b2>[^\n]+?)__"
    r"|~~(?P<s>[^\n]+?)~~"
    r"|(?<![\w*])\*(?P<i1>[^\s*](?:[^\n*]*[^\s*])?)\*(?![\w*])"
    r"|(?<![\w_])_(?P<i2>[^\s_](?:[^\n_]*[^\s_])?)_(?![\w_])"
)

_USER_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL_MENTION = re.compile(r"<#([CG][A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL_MENTION = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")
_SUBTEAM_MENTION = re.compile(r"<!subteam\^[A-Z0-9]+(?:\|([^>]*))?>")
_SLACK_LINK = re.compile(r"<((?:https?|mailto|tel):[^|>]+)(?:\|([^>]*))?>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _emphasis(match: re.Match[str]) -> str:
    bold = match.group("b1") or match.group("b2")
    if bold is not None:
        return f"*{bold}*"
    if match.group("s") is not None:
        return f"~{match.group('s')}~"
    return f"_{match.group('i1') or match.group('i2')}_"


def to_mrkdwn(markdown: str) -> str:
    """Convert the model's Markdown to Slack mrkdwn.

    `**b**`/`__b__` → `*b*`, `*i*`/`_i_` → `_i_`, `~~s~~` → `~s~`, `[t](u)` →
    `<u|t>`, `# Heading` → `*Heading*`, list bullets → `•`. Code spans and
    fenced blocks are kept verbatim (a fence's language tag is dropped: Slack
    would print it; backticks inside a block get a zero-width space between
    them, which Slack would otherwise read as the block's end). `&`, `<` and `>` are escaped everywhere, code included,
    because Slack parses control sequences inside code too.

    Args:
        markdown: Text as the model wrote it.

    Returns:
        The same text in mrkdwn.
    """
    kept: list[str] = []

    def keep(rendered: str) -> str:
        kept.append(rendered)
        return _PLACEHOLDER.format(len(kept) - 1)

    # Fenced blocks by CommonMark's rules (a longer fence holds a shorter one); Slack ends a block at any ```,
    # so backticks inside one are kept apart by a zero-width space: shown verbatim, never read as a fence.
    parts = [block.text if block.fence is None else keep("```\n" + _escape(break_backtick_runs(block.text)) + "\n```")
             for block in blocks(markdown)]
    text = "\n".join(parts)
    text = _INLINE_CODE.sub(lambda m: keep(_escape(m.group(0))), text)
    text = _escape(text)
    text = _LINK.sub(lambda m: keep(f"<{m.group(2)}|{m.group(1).replace('|', '¦')}>"), text)
    text = _HEADING.sub(lambda m: f"**{m.group(1)}**", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _EMPHASIS.sub(_emphasis, text)
    return _PLACEHOLDER_RE.sub(lambda m: kept[int(m.group(1))], text)


def split_mrkdwn(markdown: str, limit: int) -> list[str]:
    """Split Markdown at `limit` and convert each chunk, re-splitting any chunk the conversion grew past it.

    Splitting happens on the Markdown (so `split_text` can close and reopen
    code fences), conversion afterwards (so an escape like `&amp;` or a
    `<url|text>` link is never cut in half).

    Args:
        markdown: The whole reply.
        limit: Maximum characters per converted message.

    Returns:
        mrkdwn chunks, each at most `limit` characters, in order.
    """
    out: list[str] = []
    for chunk in split_text(markdown, limit):
        rendered = to_mrkdwn(chunk)
        if len(rendered) <= limit or len(chunk) <= 16:
            out.append(rendered[:limit])
            continue
        smaller = max(16, (limit * len(chunk)) // len(rendered) - 8)
        out.extend(split_mrkdwn(chunk, min(smaller, len(chunk) - 1)) if smaller < len(chunk) else [rendered[:limit]])
    return out


def from_slack(text: str, *, bot_user_id: str | None) -> str:
    """Turn inbound Slack text into plain text for the model.

    The bot's own mention is removed; other user mentions become `@U123` (or
    `@name` when Slack supplied one), channels `#name`, links `label (url)` or
    the bare url, and `&amp;`/`&lt;`/`&gt;` are unescaped.

    Args:
        text: The event's `text` field.
        bot_user_id: The bot's user id, whose mentions are stripped.

    Returns:
        The cleaned text, stripped of surrounding whitespace.
    """

    def user(match: re.Match[str]) -> str:
        if match.group(1) == bot_user_id:
            return ""
        return f"@{match.group(2) or match.group(1)}"

    def link(match: re.Match[str]) -> str:
        url, label = match.group(1), match.group(2)
        return f"{label} ({url})" if label and label != url else url

    text = _USER_MENTION.sub(user, text)
    text = _CHANNEL_MENTION.sub(lambda m: f"#{m.group(2) or m.group(1)}", text)
    text = _SPECIAL_MENTION.sub(lambda m: f"@{m.group(1)}", text)
    text = _SUBTEAM_MENTION.sub(lambda m: f"@{m.group(1) or 'group'}", text)
    text = _SLACK_LINK.sub(link, text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def mentions(text: str, user_id: str | None) -> bool:
    """Whether `text` contains `<@user_id>` (with or without a `|name` label)."""
    if not user_id:
        return False
    return any(match.group(1) == user_id for match in _USER_MENTION.finditer(text))
