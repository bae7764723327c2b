"""Notices, log redaction, the inbound journal, the journaled outbox and the session lanes."""
from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import structlog

from adapters.base import Attachment, ChatTarget, InboundMessage, SentMessage
from agent.context.engine import CompressionEvent
from gateway.coord.base import OutboundItem
from gateway.coord.memory import MemoryOutbox
from gateway.delivery.notices import NoticeBoard
from gateway.delivery.outbox_file import JournaledOutbox
from gateway.i18n import say
from gateway.intake.journal import InboundJournal
from gateway.intake.queueing import Job, SessionLanes
from gateway.intake.routing import route
from gateway.ops.logs import REDACTED, configure_logging


class Channel:
    language = "en"

    def __init__(self) -> None:
        self.log: list[tuple[str, object, str]] = []

    async def send_notice(self, text: str) -> object:
        handle = len(self.log)
        self.log.append(("send", handle, text))
        return handle

    async def edit_notice(self, handle: object, text: str) -> None:
        self.log.append(("edit", handle, text))


async def test_notice_is_sent_then_edited_with_the_figures() -> None:
    """Start sends "compressing context…"; finish edits it to "context compressed: A → B tokens"."""
    channel = Channel()
    board = NoticeBoard(channel, progress=True, warned=[])
    await board(CompressionEvent("started", "hygiene"))
    await board(CompressionEvent("finished", "hygiene", 182_000, 41_000))
    assert channel.log == [("send", 0, say("en", "compress.started")), ("edit", 0, "context compressed: 182,000 → 41,000 tokens")]


async def test_warnings_are_shown_once_even_without_progress_notices() -> None:
    """Blocked and aborted warnings appear once per session; start/finish stay hidden when notices are off."""
    channel = Channel()
    warned: list[str] = []
    for _ in range(2):
        board = NoticeBoard(channel, progress=False, warned=warned)
        await board(CompressionEvent("started", "post_response"))
        await board(CompressionEvent("blocked", "post_response"))
        await board(CompressionEvent("aborted", "post_response"))
    assert [text for _, _, text in channel.log] == [say("en", "compress.blocked"), say("en", "compress.aborted")]


def test_logs_redact_secret_keys_and_sk_strings() -> None:
    """Values of token/key/secret/password fields are hidden; sk-… strings are masked anywhere."""
    out = io.StringIO()
    configure_logging(fmt="json", stream=out)
    try:
        structlog.get_logger("t").info(
            "x.y", api_key="sk-abcdefghijkl", bot_token="123:abc", password="hunter2", note="used sk-live1234567890 here",
            prompt_tokens=1200, session_key="agent:default:web:dm:1",
        )
    finally:
        structlog.reset_defaults()
    line = json.loads(out.getvalue())
    assert (line["api_key"], line["bot_token"], line["password"]) == (REDACTED, REDACTED, REDACTED)
    assert "sk-live1234567890" not in line["note"] and line["prompt_tokens"] == 1200
    assert line["session_key"] == "agent:default:web:dm:1"


def _inbound(text: str, ts: float) -> InboundMessage:
    return InboundMessage(
        platform="web", chat_id="c", chat_type="dm", user_id="u", user_name="n", text=text, message_id=text,
        timestamp=ts, attachments=(Attachment(kind="image", url="http://x/1.png"),), delivery_id=f"web:c:{text}",
    )


def test_journal_recovers_unfinished_messages_once(tmp_path: Path) -> None:
    """Recorded and not done → recovered after a restart (oldest first); done → gone."""
    first_run = InboundJournal(tmp_path / "inflight", node="host:1")
    first_run.open()
    done = first_run.record(_inbound("a", 1.0))
    first_run.record(_inbound("b", 2.0))
    first_run.done(done)
    first_run.close()
    restarted = InboundJournal(tmp_path / "inflight", node="host:2")
    restarted.open()
    recovered = restarted.recover()
    assert [m for _, m in recovered] == [_inbound("b", 2.0)]
    restarted.done(recovered[0][0])
    assert (restarted.recover(), restarted.pending_count()) == ([], 0)
    restarted.close()


def test_journal_never_takes_a_live_process_entries(tmp_path: Path) -> None:
    """Two processes on one home: the second recovers nothing while the first runs, everything after it exits."""
    live = InboundJournal(tmp_path / "inflight", node="host:1")
    live.open()
    live.record(_inbound("busy", 1.0))
    other = InboundJournal(tmp_path / "inflight", node="host:2")
    other.open()
    while_alive = other.recover()
    live.close()
    after_exit = other.recover()
    assert (while_alive, [m.text for _, m in after_exit]) == ([], ["busy"])
    other.close()


async def test_journaled_outbox_restores_unacked_items(tmp_path: Path) -> None:
    """An item put and not acked comes back after a restart (a new in-memory outbox)."""
    path = tmp_path / "outbox.jsonl"
    item = OutboundItem("web", "c", None, "hello", "k")
    first = JournaledOutbox(MemoryOutbox(), path)
    kept = await first.put(item)
    acked = await first.put(OutboundItem("web", "c", None, "sent", "k"))
    await first.ack(acked)
    assert kept != acked
    second = JournaledOutbox(MemoryOutbox(), path)
    assert await second.restore() == 1
    assert [p.item.text for p in await second.pending()] == ["hello"]


async def test_lanes_run_one_job_per_session_in_order() -> None:
    """Jobs of one session run in order, one at a time; other sessions run beside them."""
    log: list[str] = []
    running: dict[str, int] = {}
    peak: dict[str, int] = {}

    async def run(job: Job) -> None:
        key = job.route.key
        running[key] = running.get(key, 0) + 1
        peak[key] = max(peak.get(key, 0), running[key])
        await asyncio.sleep(0)
        log.append(job.message.text)
        running[key] -= 1

    lanes = SessionLanes(run)
    for i in range(5):
        for chat in ("x", "y"):
            message = InboundMessage("web", chat, "dm", "u", "n", f"{chat}{i}", str(i), 0.0)
            lanes.submit(Job("turn", message, route(message, profile="p", group_sessions_per_user=False)))
    assert await lanes.drain(5.0) == []
    assert [t for t in log if t.startswith("x")] == [f"x{i}" for i in range(5)]
    assert peak == {"agent:p:web:dm:x": 1, "agent:p:web:dm:y": 1}


async def test_a_failing_or_stopped_job_leaves_its_lane_running() -> None:
    """A job that raises or is stopped ends alone: the lane's next jobs still run, in order, then the lane goes."""
    ran: list[str] = []
    started = asyncio.Event()

    async def run(job: Job) -> None:
        ran.append(job.message.text)
        if job.message.text == "boom":
            raise RuntimeError("the job failed")
        if job.message.text == "slow":
            started.set()
            await asyncio.Event().wait()  # until stopped

    lanes = SessionLanes(run)
    texts = ["boom", "slow", "after"]
    for i, text in enumerate(texts):
        message = InboundMessage("web", "c", "dm", "u", "n", text, str(i), 0.0)
        lanes.submit(Job("turn", message, route(message, profile="p", group_sessions_per_user=False)))
    key = "agent:p:web:dm:c"
    await started.wait()
    assert lanes.busy(key) and lanes.queued(key) == 1
    stopped = lanes.stop(key)
    assert stopped is not None and stopped.message.text == "slow"
    assert await lanes.drain(5.0) == []
    assert ran == texts
    assert lanes.active_sessions == 0 and not lanes.busy(key)


async def test_drain_returns_what_did_not_finish() -> None:
    """Past the grace period the running job is cancelled and returned with the queued ones."""
    release = asyncio.Event()

    async def run(job: Job) -> None:
        await release.wait()

    lanes = SessionLanes(run)
    jobs = []
    for i in range(3):
        message = InboundMessage("web", "c", "dm", "u", "n", f"m{i}", str(i), 0.0)
        jobs.append(Job("turn", message, route(message, profile="p", group_sessions_per_user=False)))
        lanes.submit(jobs[-1])
    unfinished = await lanes.drain(0.05)
    assert sorted(j.message.text for j in unfinished) == ["m0", "m1", "m2"]


async def test_journaled_outbox_file_is_emptied_when_nothing_is_pending(tmp_path: Path, monkeypatch: object) -> None:
    """Once every item is acked and enough records piled up, the journal file starts over."""
    import gateway.delivery.outbox_file as module

    monkeypatch.setattr(module, "COMPACT_AFTER_RECORDS", 4)  # type: ignore[attr-defined]
    path = tmp_path / "outbox.jsonl"
    outbox = JournaledOutbox(MemoryOutbox(), path)
    for text in ("a", "b"):
        await outbox.ack(await outbox.put(OutboundItem("web", "c", None, text, "k")))
    kept = await outbox.put(OutboundItem("web", "c", None, "pending", "k"))
    outbox.close()
    assert [json.loads(line).get("put") for line in path.read_text().splitlines()] == [kept]


def test_embedded_defaults_build_the_web_adapter_and_console_on_request(tmp_path: Path) -> None:
    """No config: the web chat on 127.0.0.1:8080; platforms.console adds the terminal chat."""
    from adapters.console import ConsoleAdapter
    from adapters.web import WebAdapter
    from gateway.build import build_adapters
    from gateway.config import parse_config

    defaults = build_adapters(parse_config({"home": str(tmp_path)}, env={}))
    both = build_adapters(parse_config({"home": str(tmp_path), "platforms": {"console": True}}, env={}))
    web = defaults["web"]
    assert isinstance(web, WebAdapter) and (web.host, web.port) == ("127.0.0.1", 8080)
    assert sorted(both) == ["console", "web"] and isinstance(both["console"], ConsoleAdapter)


async def test_resend_delivers_pending_replies_and_leaves_others_to_the_poller() -> None:
    """Pending replies are resent and acked; a platform this process cannot send on is left alone."""
    from gateway.delivery.outbound import Delivery
    from tests.gateway.fake_platform import FakePlatform

    class NotPolling(FakePlatform):
        can_send = False

    outbox = MemoryOutbox()
    web, telegram = FakePlatform("web"), NotPolling("telegram")
    delivery = Delivery(adapters={"web": web, "telegram": telegram}, outbox=outbox, owner="p1")
    await outbox.put(OutboundItem("web", "c", None, "resent", "k"))
    await outbox.put(OutboundItem("telegram", "c", None, "for the poller", "k"))
    sent = await delivery.resend_pending()
    assert (sent, web.texts(), telegram.texts()) == (1, ["resent"], [])
    assert [p.item.text for p in await outbox.pending()] == ["for the poller"]


async def test_a_resent_reply_with_a_draft_is_the_drafts_last_edit_not_a_second_message() -> None:
    """A reply recorded with its streamed draft (the sender died before its ack) is resent as an edit of that draft;
    the item keeps the draft's id through its JSON form, as a shared outbox stores it."""
    from gateway.delivery.outbound import Delivery
    from tests.gateway.fake_platform import FakePlatform

    web = FakePlatform("web")
    draft = (await web.send(ChatTarget("web", "c"), "half a rep ▌"))[0]
    item = OutboundItem("web", "c", None, "half a reply, whole", "k", draft_id=draft.message_id)
    assert OutboundItem.from_json(item.to_json()) == item
    outbox = MemoryOutbox()
    await outbox.put(item)
    delivery = Delivery(adapters={"web": web}, outbox=outbox, owner="p2")
    assert await delivery.resend_pending() == 1
    assert web.texts() == ["half a reply, whole"]  # one message: the draft, edited into the reply
    assert await outbox.pending() == []


async def test_a_reply_whose_draft_is_gone_is_sent_as_a_new_message() -> None:
    """The platform refuses the draft's edit for good (a user deleted it): the reply is sent, not given up on."""
    from chorus_errors import AdapterError
    from gateway.delivery.outbound import Delivery
    from tests.gateway.fake_platform import FakePlatform

    class DraftDeleted(FakePlatform):
        async def edit(self, sent: SentMessage, text: str) -> None:
            raise AdapterError("Bad Request: message to edit not found", platform="web", status=400)

    web = DraftDeleted("web")
    outbox = MemoryOutbox()
    await outbox.put(OutboundItem("web", "c", None, "the reply", "k", draft_id="out-gone"))
    assert await Delivery(adapters={"web": web}, outbox=outbox, owner="p3").resend_pending() == 1
    assert web.texts() == ["the reply"] and await outbox.pending() == []


async def test_a_discord_reply_resent_after_its_sender_died_is_posted_once() -> None:
    """The sender died after Discord accepted, before its ack landed; the replica taking over sends the reply
    again under the same outbox id, which Discord's enforced nonce turns into the first post."""
    from gateway.delivery.outbound import Delivery
    from tests.adapters.discord.conftest import make_adapter
    from tests.fakes.discord_api import GENERAL_ID, FakeDiscord

    class AckNeverLands(MemoryOutbox):
        async def ack(self, item_id: str) -> None:
            return None  # the sender was killed first

        async def claim(self, item_id: str, *, owner: str, ttl: float) -> bool:
            return True  # by the time the next replica looks, the dead sender's claim has run out

    async with FakeDiscord() as fake:
        adapter = make_adapter(fake)
        await adapter.start(asyncio.Queue())
        try:
            outbox = AckNeverLands()
            await outbox.put(OutboundItem("discord", GENERAL_ID, None, "the one answer", "k"))
            dying = Delivery(adapters={"discord": adapter}, outbox=outbox, owner="replica-a")
            taker = Delivery(adapters={"discord": adapter}, outbox=outbox, owner="replica-b")
            assert await dying.resend_pending() == 1 and await taker.resend_pending() == 1
            assert [m["content"] for m in fake.posted.values()] == ["the one answer"]
        finally:
            await adapter.stop()


async def test_journaled_outbox_nests_the_item_and_restores_the_earlier_string_form(tmp_path: Path) -> None:
    """A put line holds the item as an object (encoded once); a line of an earlier version (a string) still restores."""
    path = tmp_path / "outbox.jsonl"
    outbox = JournaledOutbox(MemoryOutbox(), path)
    await outbox.put(OutboundItem("web", "c", None, 'say "hi"\nthen ✓', "k"))
    outbox.close()
    (line,) = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["item"]["text"] == 'say "hi"\nthen ✓'
    old = OutboundItem("web", "c", "t", "earlier", "k", reply_to="m1")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"put": "old-1", "item": old.to_json()}, ensure_ascii=False) + "\n")
    restored = JournaledOutbox(MemoryOutbox(), path)
    assert await restored.restore() == 2
    assert sorted((p.item.text, p.item.reply_to) for p in await restored.pending()) == [
        ("earlier", "m1"), ('say "hi"\nthen ✓', None)]
    assert [json.loads(line)["item"]["text"] for line in path.read_text(encoding="utf-8").splitlines()] == [
        'say "hi"\nthen ✓', "earlier"]
