"""The trace context a message carries: kept by both journals, added to an older shared journal, costless when off.

A message's `traceparent` (stamped at intake while tracing is on) comes back with it from the home's
journal (a restart) and from the shared journal (a takeover), whose rows keep it in a column of their
own; a table made before that column gets it when a replica opens the journal, once however many open
it. With `telemetry.otlp_endpoint` null no tracer provider is installed, the trace SDK and the exporter are
never loaded, and every span helper is the no-op.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from adapters.base import InboundMessage
from agent.store.postgres import PostgresSessionStore
from chorus_errors import ConfigError
from gateway.config import TelemetrySettings, parse_config
from gateway.intake.journal import InboundJournal
from gateway.shared import PostgresJournal
from gateway.telemetry.setup import tracer_provider, traces_url
from gateway.telemetry.spans import context_of
from tests.postgres import fresh_database

ROOT = Path(__file__).resolve().parents[2]
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _message(n: int, traceparent: str | None = TRACEPARENT) -> InboundMessage:
    return InboundMessage(
        platform="telegram", chat_id="42", chat_type="dm", user_id="7", user_name="Ada", text=f"hello {n}",
        message_id=str(n), timestamp=1_780_000_000.0 + n, delivery_id=f"telegram:{n}", traceparent=traceparent,
    )


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("chorus_trace_context") as url:
        yield url


def test_the_homes_journal_gives_a_message_back_with_its_trace(tmp_path: Path) -> None:
    """A process that stopped mid-turn: the next one recovers the message with the trace it was taken in under."""
    stopped = InboundJournal(tmp_path / "inflight", node="stopped")
    stopped.open()
    stopped.record_many([_message(1), _message(2, traceparent=None)])
    stopped.close()
    restarted = InboundJournal(tmp_path / "inflight", node="restarted")
    restarted.open()
    assert [message.traceparent for _, message in restarted.recover()] == [TRACEPARENT, None]
    restarted.close()


def test_a_shared_row_keeps_the_trace_in_its_own_column_for_the_replica_taking_it_over(database: str) -> None:
    with PostgresSessionStore(database) as store:
        accepting = PostgresJournal(store.connection, node="accepting", lease_seconds=60.0)
        accepting.open()
        entry = accepting.record(_message(3))
        with psycopg.connect(database, autocommit=True) as conn:
            row = conn.execute("SELECT traceparent, message FROM chorus_inbound WHERE entry = %s", (entry,)).fetchone()
        assert row is not None and row[0] == TRACEPARENT and "traceparent" not in json.loads(row[1])
        accepting.close()  # a clean stop hands the row over at once
        taking = PostgresJournal(store.connection, node="taking", lease_seconds=60.0)
        taking.open()
        [taken] = taking.take_expired(limit=10)
        assert (taken.entry, taken.message) == (entry, _message(3))
        taking.close()


def test_an_older_shared_journal_gets_the_column_once(database: str) -> None:
    """Tables made before traces were kept: the first replica to open the journal adds the column; rows written
    before keep working (no trace), and opening again changes nothing."""
    with PostgresSessionStore(database) as store:
        first = PostgresJournal(store.connection, node="old", lease_seconds=60.0)
        first.open()
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute("ALTER TABLE chorus_inbound DROP COLUMN traceparent")
            conn.execute(
                "INSERT INTO chorus_inbound (entry, dedup_key, message, owner, lease_until, created_at)"
                " VALUES ('older', 'telegram:4', %s, 'gone', 0, 0)",
                (json.dumps({**_fields(_message(4)), "attachments": []}),),
            )
        for node in ("new", "newer"):
            journal = PostgresJournal(store.connection, node=node, lease_seconds=60.0)
            journal.open()
            journal.close()
        with psycopg.connect(database, autocommit=True) as conn:
            columns = conn.execute(
                "SELECT count(*) FROM information_schema.columns"
                " WHERE table_name = 'chorus_inbound' AND column_name = 'traceparent'"
            ).fetchone()
        assert columns is not None and columns[0] == 1
        taker = PostgresJournal(store.connection, node="taker", lease_seconds=60.0)
        taker.open()
        [taken] = taker.take_expired(limit=10)
        assert (taken.entry, taken.message) == ("older", _message(4, traceparent=None))
        taker.close()
        first.close()


def _fields(message: InboundMessage) -> dict[str, object]:
    """A message as an earlier version wrote it: every field but `kind`, `quote` and `traceparent`."""
    skipped = ("kind", "quote", "traceparent", "attachments")
    return {name: getattr(message, name) for name in InboundMessage.__dataclass_fields__ if name not in skipped}


def test_a_message_taken_over_follows_the_sampling_of_the_replica_that_accepted_it() -> None:
    """`sample_ratio` 0 traces no new message, yet a job whose message was sampled elsewhere is recorded (its
    parent decides); its spans name the service and the replica."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    settings = TelemetrySettings(otlp_endpoint="http://collector:4318", service_name="svc", sample_ratio=0.0)
    provider = tracer_provider(settings, instance_id="replica-b")
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("new message") as new:
        assert not new.is_recording()
    unsampled = TRACEPARENT[:-2] + "00"
    for parent in (TRACEPARENT, unsampled):
        with tracer.start_as_current_span("taken over", context=context_of(parent)):
            pass
    [span] = exported.get_finished_spans()
    assert span.context.trace_id == int(TRACEPARENT.split("-")[1], 16)
    resource = span.resource.attributes
    assert (resource["service.name"], resource["service.instance.id"]) == ("svc", "replica-b")
    provider.shutdown()


@pytest.mark.parametrize(("endpoint", "url"), [
    ("http://collector:4318", "http://collector:4318/v1/traces"),
    ("https://otel.example.org/", "https://otel.example.org/v1/traces"),
    ("http://collector:4318/v1/traces", "http://collector:4318/v1/traces"),
])
def test_the_endpoint_is_the_collectors_base_url(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url


@pytest.mark.parametrize(("raw", "expected"), [
    ({"telemetry": {"otlp_endpoint": "collector:4318"}}, "telemetry.otlp_endpoint"),
    ({"telemetry": {"sample_ratio": 1.5}}, "telemetry.sample_ratio: got 1.5"),
    ({"telemetry": {"otlp_endpont": "http://c:4318"}}, "otlp_endpoint"),  # did you mean
])
def test_bad_telemetry_settings_name_the_key(raw: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, source="c.yaml")
    assert expected in str(caught.value)


_OFF = """
import json, sys
from adapters.base import InboundMessage
from agent.messages import ToolCall
from agent.tracing import model_call, tool_call
from gateway.config import ChorusConfig
import gateway.app, gateway.build, gateway.cli.run
from gateway.telemetry.setup import start_tracing
from gateway.telemetry.spans import stage, traced_intake, tracing_on
from opentelemetry import trace

tracing = start_tracing(ChorusConfig().telemetry, instance_id="replica")
message = InboundMessage(platform="web", chat_id="c", chat_type="dm", user_id="u", user_name="U", text="hi",
                         message_id="1", timestamp=0.0)
taken = [message]
with traced_intake(taken):
    pass
with model_call("m", None) as call, tool_call(ToolCall(id="t", name="memory", arguments="{}")) as tool:
    pass
print(json.dumps({
    "tracing": tracing is not None, "stamped": taken[0] is not message,
    "on": [tracing_on(), type(trace.get_tracer_provider()).__name__],
    # The trace SDK and the exporter (redis-py loads the SDK's metrics part by itself, whatever the config).
    "sdk": sorted(name for name in sys.modules if name.startswith(("opentelemetry.sdk.trace", "opentelemetry.exporter"))),
    "spans": [call.span is not None, tool.span is not None, type(stage("x")).__name__],
}))
"""


def test_with_telemetry_off_the_sdk_is_never_loaded_and_no_span_is_made() -> None:
    """In a fresh interpreter: every module a `chorus run` loads, the setup called with the defaults."""
    done = subprocess.run([sys.executable, "-c", _OFF], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "tracing": False, "on": [False, "ProxyTracerProvider"], "stamped": False, "sdk": [],
        "spans": [False, False, "nullcontext"],
    }
