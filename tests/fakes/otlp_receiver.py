"""A loopback OTLP/HTTP trace receiver: what a collector gets from the real OTLP exporter, decoded.

Serves `POST /v1/traces` on 127.0.0.1 (port 0), reads the protobuf `ExportTraceServiceRequest`
(gzip too, if the exporter compresses), keeps every span as a `ReceivedSpan` (ids in hex, attributes
and its resource's attributes as plain values) and answers an `ExportTraceServiceResponse`.
`wait_for` waits, with a deadline, for the spans received so far to satisfy a condition.
"""
from __future__ import annotations

import asyncio
import gzip
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.fakes.loopback import serve_loopback

PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root span
    name: str
    kind: int  # the protobuf's SpanKind number (1 internal, 2 server, 3 client, 4 producer, 5 consumer)
    start_ns: int
    end_ns: int
    status: int  # 0 unset, 1 ok, 2 error
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        found[pair.key] = _value(pair.value)
    return found


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one `ExportTraceServiceRequest` body."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(ReceivedSpan(
                    trace_id=span.trace_id.hex(), span_id=span.span_id.hex(), parent_span_id=span.parent_span_id.hex(),
                    name=span.name, kind=span.kind, start_ns=span.start_time_unix_nano, end_ns=span.end_time_unix_nano,
                    status=span.status.code, attributes=_attributes(span.attributes), resource=resource,
                ))
    return spans


class OtlpReceiver:
    """Use as `async with OtlpReceiver() as receiver:`; point the exporter at `receiver.endpoint`."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0  # export requests received (an empty one counts too)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        """The collector's base URL, as `telemetry.otlp_endpoint` takes it (the exporter adds /v1/traces)."""
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> OtlpReceiver:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner, self.port = await serve_loopback(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _traces(self, request: web.Request) -> web.Response:
        if request.content_type != PROTOBUF:
            return web.Response(status=415, text=f"expected {PROTOBUF}, got {request.content_type}")
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        received = decode(body)
        async with self._changed:
            self.requests += 1
            self.spans.extend(received)
            self._changed.notify_all()
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(), content_type=PROTOBUF)

    async def wait_for(self, condition: Callable[[list[ReceivedSpan]], bool], *, timeout: float = 30.0) -> None:
        """Wait until `condition(spans received so far)` holds; TimeoutError after `timeout` seconds."""
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(lambda: condition(self.spans))


__all__ = ["OtlpReceiver", "ReceivedSpan", "decode"]
