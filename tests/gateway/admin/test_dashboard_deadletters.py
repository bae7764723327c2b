"""Dead letters on the dashboard (headless Chromium) and in `GET /api/deadletters`."""
from __future__ import annotations

from pathlib import Path

from adapters.base import InboundMessage
from gateway.admin import build_admin_app
from gateway.config import ChorusConfig
from gateway.intake.deadletter import DeadLetterBox
from gateway.ops.live_config import LiveConfig
from gateway.ops.metrics import Metrics
from tests.gateway.admin.dashboard_support import FixedBackend, chromium, parse_dom, view
from tests.gateway.admin.helpers import TOKEN, serve_app


def _message(text: str) -> InboundMessage:
    return InboundMessage(platform="telegram", chat_id="-100777", chat_type="group", user_id="5", user_name="Ada",
                          text=text, message_id="9", timestamp=1.0, delivery_id="telegram:9")


async def test_dead_letters_are_listed_on_the_dashboard(tmp_path: Path) -> None:
    """Each quarantined message shows its stage, chat, error type and a preview of its text."""
    box = DeadLetterBox(tmp_path / "deadletter")
    box.put(_message("first bad one"), stage="journal", error=OSError("disk"))
    box.put(_message("x" * 500), stage="dispatch", error=KeyError("k"))
    app = build_admin_app(FixedBackend([view("agent:default:web:dm:alice", 1000)]), metrics=Metrics(), token=TOKEN,
                          live=LiveConfig(ChorusConfig()), deadletters=box)
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard#token={TOKEN}", tmp_path / "profile", "--dump-dom"))
    assert len(dom.with_class("deadletter")) == 2
    spans = [(a.get("class"), t[0]) for _tag, a, t in dom.found if t and a.get("class") in ("kind", "session", "text")]
    assert spans[-6:] == [  # the dead-letter list is the last section; newest first
        ("kind", "dispatch"), ("session", "telegram:-100777"), ("text", "KeyError · " + "x" * 200 + "…"),
        ("kind", "journal"), ("session", "telegram:-100777"), ("text", "OSError · first bad one"),
    ]
    count = next(t for _tag, a, t in dom.found if a.get("id") == "deadletter-count")
    assert count == [f"2 kept in {tmp_path / 'deadletter'}"]


async def test_long_chat_ids_are_cut_to_fit_left_of_the_bars(tmp_path: Path) -> None:
    """A 120-character chat id is shown cut in the middle (at most 36 characters), the full key in its tooltip."""
    long_key = "agent:default:slack:thread:C" + "9" * 120 + ":1717.5"
    app = build_admin_app(FixedBackend([view(long_key, 64_000), view("agent:default:web:dm:alice", 1000)]),
                          metrics=Metrics(), token=TOKEN, live=LiveConfig(ChorusConfig()))
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard#token={TOKEN}", tmp_path / "profile", "--dump-dom"))
    labels = [texts for _tag, attrs, texts in dom.found if "session-label" in attrs.get("class", "").split()]
    shown = [texts[0] for texts in labels]
    assert "web:dm:alice" in shown
    [cut] = [text for text in shown if text.startswith("slack:")]
    assert (len(cut) <= 36, "…" in cut, cut.endswith(":1717.5")) == (True, True, True)
    titles = [texts for tag, _attrs, texts in dom.found if tag == "title"]
    assert [long_key] in titles
