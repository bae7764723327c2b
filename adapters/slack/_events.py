"""Deciding what one Slack event means: an `InboundMessage`, or a reason to ignore it.

Owns `classify` (a pure function: event dict in, `Accepted | Ignored` out),
and the thread/DM/mention rules (`Accepted`, `Ignored`, `RecentKeys` come
from `adapters/decisions.py`). Knows nothing of the network, Bolt, sessions or the gateway.

Rules (documented decisions):
- `channel_type == "im"` (or a `D…` channel id, since `app_mention` carries no
  channel_type) is a DM; `channel`, `group` and `mpim` are groups.
- Thread: `thread_ts` is the thread id, so one Slack thread is one session.
  A top-level *channel* post that mentions the bot gets `thread_id = ts` when
  `thread_replies` is on: the answer opens a thread under the post and the
  follow-ups in that thread continue the same session. Top-level DMs and
  unmentioned top-level channel posts keep `thread_id=None`.
- A channel post without a mention is still delivered with
  `mentions_bot=False`: the gateway decides (record as context or ignore).
- `replies_to_bot`: a message in a thread whose parent the bot posted
  (`parent_user_id`), or a thread the bot has posted in during this run.
- Other bots' messages (`bot_id`, `bot_message`) arrive with `sender_is_bot`:
  the gateway applies `allow_bots` and its loop guard.
- `message_changed` (`classify_edit`): the post's new text as an `edited`
  message with its earlier text; an unfurl (no `edited`, same text) is ignored.
- Ignored: the bot's own messages, and message subtypes other than plain,
  `file_share`, `thread_broadcast` and `bot_message` (deletions, joins, topic changes…).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Container, Mapping
from typing import Any, Literal

from adapters.base import Attachment, InboundMessage
from adapters.decisions import Accepted, Decision, Ignored
from adapters.normalize import normalize_inbound

from ._mrkdwn import from_slack, mentions

PLATFORM = "slack"
HANDLED_SUBTYPES = frozenset({None, "file_share", "thread_broadcast", "bot_message"})
EDIT_SUBTYPE = "message_changed"


def delivery_id(channel: str, ts: str) -> str:
    """The cross-process de-duplication id of one Slack post (same for app_mention and message)."""
    return f"{PLATFORM}:{channel}:{ts}"


def _chat_type(event: Mapping[str, Any], channel: str) -> Literal["dm", "group"]:
    channel_type = event.get("channel_type")
    if channel_type == "im" or (channel_type is None and channel.startswith("D")):
        return "dm"
    return "group"


def _attachments(event: Mapping[str, Any]) -> tuple[Attachment, ...]:
    found: list[Attachment] = []
    for item in event.get("files") or ():
        if not isinstance(item, Mapping):
            continue
        mime = str(item.get("mimetype") or "")
        major = mime.split("/", 1)[0]
        kind: Literal["image", "file", "audio", "video"] = (
            "image" if major == "image" else "audio" if major == "audio" else "video" if major == "video" else "file"
        )
        size = item.get("size")
        found.append(
            Attachment(
                kind=kind,
                url=item.get("url_private"),
                name=item.get("name"),
                mime_type=mime or None,
                size=size if isinstance(size, int) else None,
            )
        )
    return tuple(found)


def _skip_reason(event: Mapping[str, Any], bot_user_id: str | None, bot_id: str | None) -> str | None:
    subtype = event.get("subtype")
    if subtype not in HANDLED_SUBTYPES:
        return f"subtype {subtype} not handled"
    if event.get("user") is not None and event.get("user") == bot_user_id:
        return "own message"
    if event.get("bot_id") is not None and event.get("bot_id") == bot_id:
        return "own message"
    if not event.get("channel") or not event.get("ts") or not (event.get("user") or event.get("bot_id")):
        return "missing channel, ts or user"
    return None


def _edited_post(event: Mapping[str, Any]) -> tuple[dict[str, Any], str | None] | str:
    """A `message_changed` event as (the post as it is now, its earlier text), or why it is no edit of the text."""
    post, before = event.get("message"), event.get("previous_message")
    if not isinstance(post, Mapping):
        return "message_changed without the message"
    earlier = str(before.get("text") or "") if isinstance(before, Mapping) else None
    if not isinstance(post.get("edited"), Mapping) or earlier == post.get("text"):
        return "message_changed that is no edit of the text (an unfurl)"
    current = {**post, "channel": event.get("channel"), "channel_type": event.get("channel_type")}
    current.pop("subtype", None)
    return current, earlier


def classify_edit(event: Mapping[str, Any], *, bot_user_id: str | None, bot_id: str | None = None,
                  bot_threads: Container[str] = frozenset(), thread_replies: bool = True) -> Decision:
    """A `message_changed` event: the post's new text as an `edited` message with its earlier text."""
    read = _edited_post(event)
    if isinstance(read, str):
        return Ignored(read)
    post, earlier = read
    decision = classify(post, bot_user_id=bot_user_id, bot_id=bot_id, bot_threads=bot_threads,
                        thread_replies=thread_replies)
    if not isinstance(decision, Accepted):
        return decision
    message = decision.message
    stamp = str(post["edited"].get("ts") or event.get("event_ts") or event.get("ts") or "")
    return Accepted(dataclasses.replace(
        message, edited=True, previous_text=from_slack(earlier, bot_user_id=bot_user_id) if earlier is not None else None,
        delivery_id=f"{message.delivery_id}:edit:{stamp}",
    ))


def classify(
    event: Mapping[str, Any],
    *,
    bot_user_id: str | None,
    bot_id: str | None = None,
    bot_threads: Container[str] = frozenset(),
    thread_replies: bool = True,
) -> Decision:
    """Decide what a Slack `message` or `app_mention` event means.

    Args:
        event: The `event` object of an `event_callback`.
        bot_user_id: The bot's user id (from auth.test).
        bot_id: The bot's bot id (from auth.test), to drop its own `bot_message`s.
        bot_threads: Thread ids (`thread_ts`) the bot has posted in.
        thread_replies: Whether a top-level channel mention opens a thread.

    Returns:
        `Accepted(message)` or `Ignored(reason)`.
    """
    reason = _skip_reason(event, bot_user_id, bot_id)
    if reason is not None:
        return Ignored(reason)
    channel, ts = str(event["channel"]), str(event["ts"])
    user = str(event.get("user") or event["bot_id"])
    from_bot = event.get("bot_id") is not None or event.get("subtype") == "bot_message"
    raw_text = str(event.get("text") or "")
    chat_type = _chat_type(event, channel)
    mentioned = event.get("type") == "app_mention" or mentions(raw_text, bot_user_id)
    thread_ts = event.get("thread_ts")
    in_thread = thread_ts is not None and thread_ts != ts
    if in_thread:
        thread_id: str | None = str(thread_ts)
    elif thread_ts is not None or (chat_type == "group" and mentioned and thread_replies):
        thread_id = ts  # the parent of a thread, or a mention whose answer opens one
    else:
        thread_id = None
    replies_to_bot = in_thread and (
        (bot_user_id is not None and event.get("parent_user_id") == bot_user_id) or str(thread_ts) in bot_threads
    )
    try:
        timestamp = float(ts)
    except ValueError:
        return Ignored(f"ts {ts!r} is not a Slack timestamp")
    return Accepted(
        normalize_inbound(InboundMessage(
            platform=PLATFORM,
            chat_id=channel,
            chat_type=chat_type,
            user_id=user,
            user_name=str(event.get("username") or user) if from_bot else user,
            text=from_slack(raw_text, bot_user_id=bot_user_id),
            message_id=ts,
            timestamp=timestamp,
            thread_id=thread_id,
            mentions_bot=mentioned,
            replies_to_bot=replies_to_bot,
            reply_to_message_id=str(thread_ts) if in_thread else None,
            attachments=_attachments(event),
            delivery_id=delivery_id(channel, ts),
            sender_is_bot=from_bot,
        ))
    )
