"""Must-show: one Telegram message is one trace across two `chorus run` replicas, read back from an OTLP receiver.

Replica A accepts the message (its webhook) and starts the turn; the model holds A's call open, and A is
stopped (SIGTERM): the turn is cancelled after the grace period, its journal row stays, and A's heartbeat
ends with it. Replica B takes the row over and runs the turn (a tool call, then the answer) and delivers
the reply. Both replicas export to one loopback OTLP/HTTP receiver, which decodes what it gets: every
span is in one trace, every parent is a span of it, and the spans of A and B carry their own
`service.instance.id`. A replica with telemetry off exports nothing, even with the standard
`OTEL_EXPORTER_OTLP_*` variables pointing at the receiver.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.telegram import SECRET_HEADER
from agent.tracing import GENAI
from gateway.telemetry.spans import SPANS
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.fakes.telegram_api import TOKEN, FakeTelegram, message, private_chat, user
from tests.gateway.failover import SECRET, Replica
from tests.gateway.replicas import replica_config
from tests.postgres import fresh_database

REPLY_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0  # a stop takes the grace period (1 s) and the last export
DUMP_TIMEOUT = 10.0
USER = 4242
NOTE = "Prefers metric units."
INSTANCE = "service.instance.id"


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("chorus_traces") as url:
        yield url


def _config(tmp_path: Path, name: str, *, model: FakeOpenAI, telegram: FakeTelegram, **sections: Any) -> Path:
    """A replica serving the Telegram webhook on a port of its own (logged as `telegram.started`)."""
    return replica_config(
        tmp_path, name,
        model={"name": "fake-model", "base_url": model.base_url, "api_key": "sk-test-not-real"},
        platforms={"web": {"enabled": False}, "telegram": {
            "enabled": True, "token": TOKEN, "base_url": telegram.base_url, "mode": "webhook", "allow_all_users": True,
            "webhook": {"url": "https://bot.example.org/tg", "secret_token": SECRET, "path": "/tg",
                        "listen": "127.0.0.1", "port": 0},
        }},
        **sections,
    )


async def _post_update(replica: Replica, text: str, update_id: int) -> None:
    """Telegram's webhook POST to `replica`; it answers 200 once the message is journaled."""
    payload = {"update_id": update_id, "message": message(private_chat(USER), text, sender=user(USER, "Ada", "ada"))}
    async with aiohttp.ClientSession() as session, session.post(
        f"http://127.0.0.1:{replica.port}/tg", data=json.dumps(payload),
        headers={SECRET_HEADER: SECRET, "Content-Type": "application/json"},
    ) as response:
        assert response.status == 200, await response.text()


async def _stop(replica: Replica) -> None:
    """SIGTERM (which flushes its spans). One still running after `STOP_TIMEOUT` writes its tasks' stacks to its
    log (SIGUSR1) and is killed: the test fails showing where it waited."""
    process = replica.process
    if process is None or process.returncode is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
        return
    except TimeoutError:
        process.send_signal(signal.SIGUSR1)
    log = replica.config.parent / "replica.log"
    deadline = asyncio.get_running_loop().time() + DUMP_TIMEOUT
    while "chorus: " not in log.read_text(errors="replace").split("gateway.stopping")[-1]:
        if asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.1)  # polling the log for the dump, with a deadline
    replica.kill()
    await process.wait()
    raise AssertionError(f"replica {replica.index} did not stop: {log.read_text(errors='replace')[-6000:]}")


def _memory_call(content: str) -> dict[str, Any]:
    arguments = json.dumps({"action": "add", "target": "user", "content": content})
    return {"id": "call_note", "type": "function", "function": {"name": "memory", "arguments": arguments}}


def _named(spans: list[ReceivedSpan], name: str) -> list[ReceivedSpan]:
    return [span for span in spans if span.name == name]


def _taken_over_and_delivered(spans: list[ReceivedSpan]) -> bool:
    """Both replicas' jobs arrived, and the delivery (the last span of B's turn) too."""
    return len(_named(spans, SPANS.JOB)) == 2 and bool(_named(spans, SPANS.DELIVERY))


async def test_one_telegram_message_is_one_trace_across_two_replicas(
    fake_openai: FakeOpenAI, tmp_path: Path, database: str, redis_url: str, redis_prefix: str,
) -> None:
    held = asyncio.Event()  # A's model call waits on it: A is stopped in the middle of the turn
    fake_openai.push(Reply(content="never delivered", gate=held),
                     Reply(content=None, tool_calls=[_memory_call(NOTE)]), Reply(content="noted: metric units"))
    async with OtlpReceiver() as receiver, FakeTelegram() as telegram:
        telemetry = {"otlp_endpoint": receiver.endpoint, "service_name": "chorus-test"}
        a, b = (Replica(index, _config(
            tmp_path, name, model=fake_openai, telegram=telegram, store={"url": database},
            redis={"url": redis_url, "key_prefix": redis_prefix}, telemetry=telemetry,
        )) for index, name in enumerate("ab"))
        try:
            await a.start()
            await b.start()
            await _post_update(a, "remember that I like metric units", telegram.next_update_id())
            await fake_openai.wait_for_request(1, timeout=REPLY_TIMEOUT)  # A's turn is in its model call
            await _stop(a)  # SIGTERM: A cancels the turn after its grace, keeps the row, and flushes its spans
            assert a.process is not None and a.process.returncode == 0
            held.set()
            reply = await telegram.wait_for_text(USER, "noted", timeout=REPLY_TIMEOUT)
            assert reply == "noted: metric units"
        finally:
            held.set()
            await _stop(a)
            await _stop(b)
        assert b.process is not None and b.process.returncode == 0
        await receiver.wait_for(_taken_over_and_delivered, timeout=REPLY_TIMEOUT)
        spans = list(receiver.spans)

    assert len(fake_openai.requests) == 3  # A's call, then B's two: the turn ran again on B, from the start
    # One trace, one root (A's intake), every parent a span of the trace.
    assert {span.trace_id for span in spans} == {spans[0].trace_id}
    by_id = {span.span_id: span for span in spans}
    (root,) = [span for span in spans if not span.parent_span_id]
    assert root.name == SPANS.INTAKE and root.attributes[SPANS.VERDICT] == "respond"
    assert all(span.parent_span_id in by_id for span in spans if span is not root)

    replica_a, replica_b = root.resource[INSTANCE], None
    jobs = sorted(_named(spans, SPANS.JOB), key=lambda span: span.start_ns)
    assert [job.parent_span_id for job in jobs] == [root.span_id, root.span_id]  # B's job continues A's intake
    assert [job.attributes[SPANS.RESUMED] for job in jobs] == [False, True]
    assert [job.attributes.get(SPANS.CANCELLED) for job in jobs] == [True, None]  # A's was cut short by its stop
    job_a, job_b = jobs
    replica_b = job_b.resource[INSTANCE]
    assert job_a.resource[INSTANCE] == replica_a and replica_a != replica_b
    assert {span.resource[INSTANCE] for span in spans} == {replica_a, replica_b}
    assert {span.resource["service.name"] for span in spans} == {"chorus-test"}

    def stages(job: ReceivedSpan) -> list[str]:
        children = sorted((span for span in spans if span.parent_span_id == job.span_id), key=lambda s: s.start_ns)
        return [span.name for span in children]

    assert stages(job_a) == [SPANS.QUEUE, SPANS.SESSION_LOCK, "chat fake-model"]
    assert stages(job_b) == [SPANS.QUEUE, SPANS.SESSION_LOCK, "chat fake-model", "execute_tool memory",
                             "chat fake-model", SPANS.DELIVERY]

    chats = sorted(_named(spans, "chat fake-model"), key=lambda span: span.start_ns)
    cancelled, asked, answered = chats
    assert cancelled.resource[INSTANCE] == replica_a and cancelled.status == 2  # stopped mid-call: an error
    assert cancelled.attributes[GENAI.ERROR_TYPE] == "CancelledError"
    for chat, reason in ((asked, "tool_calls"), (answered, "stop")):
        assert chat.kind == 3 and chat.resource[INSTANCE] == replica_b  # CLIENT
        attributes = chat.attributes
        assert (attributes[GENAI.OPERATION], attributes[GENAI.PROVIDER]) == ("chat", "openai")
        assert (attributes[GENAI.REQUEST_MODEL], attributes[GENAI.RESPONSE_MODEL]) == ("fake-model", "fake-model")
        assert attributes[GENAI.INPUT_TOKENS] > 0 and attributes[GENAI.OUTPUT_TOKENS] == 5
        assert attributes[GENAI.FINISH_REASONS] == [reason]
    (tool,) = _named(spans, "execute_tool memory")
    assert tool.attributes[GENAI.OPERATION] == "execute_tool" and tool.attributes[GENAI.TOOL_NAME] == "memory"
    assert tool.attributes[GENAI.TOOL_CALL_ID] == "call_note" and tool.status != 2
    (delivery,) = _named(spans, SPANS.DELIVERY)
    assert delivery.attributes[SPANS.SENT] is True and delivery.resource[INSTANCE] == replica_b
    # The log lines of each replica's job name the trace (`turn.cancelled` on A, `turn.finished` on B).
    for replica, event in ((a, "turn.cancelled"), (b, "turn.finished")):
        logged = [json.loads(line) for line in (replica.config.parent / "replica.log").read_text().splitlines()
                  if line.startswith("{")]
        assert [line.get("trace_id") for line in logged if line["event"] == event] == [root.trace_id]
    # Each span lies within its parent's time, across the two processes' clocks (one machine here).
    for span in spans:
        if span is not root:
            parent = by_id[span.parent_span_id]
            assert span.start_ns >= parent.start_ns and (parent.name == SPANS.INTAKE or span.end_ns <= parent.end_ns)


async def test_with_telemetry_off_nothing_is_exported(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No `telemetry.otlp_endpoint`: a turn answered and the replica stopped (which would flush any span), the
    receiver got no request, though the standard OTLP variables name it."""
    async with OtlpReceiver() as receiver, FakeTelegram() as telegram:
        monkeypatch.setitem(os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setitem(os.environ, "OTEL_TRACES_EXPORTER", "otlp")
        replica = Replica(0, _config(tmp_path, "off", model=fake_openai, telegram=telegram))
        try:
            await replica.start()
            await _post_update(replica, "hello", telegram.next_update_id())
            assert await telegram.wait_for_text(USER, "echo: ", timeout=REPLY_TIMEOUT) == "echo: hello"
        finally:
            await _stop(replica)
        assert replica.process is not None and replica.process.returncode == 0
        assert (receiver.requests, receiver.spans) == (0, [])
