"""The Events API HTTP endpoint: verify, validate, de-duplicate retries, then hand to Bolt.

Owns `handle_events`. Order matters: the signature (and its 5-minute
timestamp window) is checked before anything in the body is looked at, so an
unsigned caller learns nothing (401); a signed but malformed body is a clear
400 (events are JSON; slash commands and button clicks are form bodies); a Slack retry (`X-Slack-Retry-Num`) of an event already taken in is
acked with 200 without being dispatched again. Everything else goes through
`slack_bolt.adapter.aiohttp` (`to_bolt_request` → `async_dispatch` →
`to_aiohttp_response`), which answers url_verification and acks events
before the listeners run. Knows nothing of sessions or the gateway.
"""
from __future__ import annotations

import json
from collections.abc import Container
from urllib.parse import parse_qsl

import structlog
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

log = structlog.get_logger(__name__)

RETRY_HEADER = "X-Slack-Retry-Num"
FORM_TYPE = "application/x-www-form-urlencoded"
RETRY_REASON_HEADER = "X-Slack-Retry-Reason"


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status)


def _verified(verifier: SignatureVerifier, body: str, request: web.Request) -> bool:
    timestamp = request.headers.get("X-Slack-Request-Timestamp")
    signature = request.headers.get("X-Slack-Signature")
    if timestamp is None or signature is None or not timestamp.strip().lstrip("-").isdigit():
        return False
    return verifier.is_valid(body=body, timestamp=timestamp, signature=signature)


def _parse(body: str, content_type: str) -> dict[str, object] | str:
    """The body as an object, or a message saying what is wrong with it.

    Slack posts events as JSON, but slash commands and interactivity (buttons) as
    `application/x-www-form-urlencoded`: a command's fields, or one `payload` field of JSON.
    """
    if content_type == FORM_TYPE:
        return _parse_form(body)
    try:
        parsed = json.loads(body)
    except ValueError as exc:
        return f"malformed JSON body: {exc}"
    except RecursionError:
        return "malformed JSON body: nested too deeply"
    if not isinstance(parsed, dict):
        return f"the body must be a JSON object, got {type(parsed).__name__}"
    if not isinstance(parsed.get("type"), str):
        return "the body has no string 'type' field"
    return parsed


def _parse_form(body: str) -> dict[str, object] | str:
    """A slash command (`command=/name&…`) or an interaction (`payload={json}`)."""
    fields = dict(parse_qsl(body, keep_blank_values=True))
    if "payload" in fields:
        interaction = _parse(fields["payload"], "application/json")
        return interaction if isinstance(interaction, str) else {"payload": interaction}
    if fields.get("command", "").startswith("/"):
        return dict(fields)
    return "a form body must carry a slash command ('command=/name') or an interaction ('payload=…')"


async def handle_events(
    request: web.Request,
    *,
    app: AsyncApp | None,
    verifier: SignatureVerifier,
    seen_events: Container[str],
) -> web.Response:
    """Answer one Events API POST.

    Args:
        request: The aiohttp request.
        app: The running Bolt app, or None while the adapter is stopped (→ 503).
        verifier: Checks `X-Slack-Signature` / `X-Slack-Request-Timestamp`.
        seen_events: event_ids already taken in, for Slack's retries.

    Returns:
        401 for a bad or stale signature, 400 for a malformed body, 503 when
        stopped, otherwise Bolt's answer (200 ack, url_verification challenge).
    """
    try:
        body = await request.text()
    except UnicodeDecodeError:
        body = None
    if body is None or not _verified(verifier, body, request):
        log.warning("slack.events.rejected", reason="bad signature or stale timestamp", status=401)
        return _error(401, "invalid request: bad signature, stale timestamp or missing signing headers")
    parsed = _parse(body, request.content_type)
    if isinstance(parsed, str):
        log.warning("slack.events.rejected", reason=parsed, status=400)
        return _error(400, parsed)
    if app is None:
        return _error(503, "the slack adapter is not started")
    retry = request.headers.get(RETRY_HEADER)
    event_id = parsed.get("event_id")
    if retry is not None and isinstance(event_id, str) and event_id in seen_events:
        log.info(
            "slack.events.retry_acked",
            event_id=event_id,
            retry_num=retry,
            retry_reason=request.headers.get(RETRY_REASON_HEADER),
        )
        return web.Response(status=200)
    bolt_response = await app.async_dispatch(await to_bolt_request(request))
    return await to_aiohttp_response(bolt_response)
