"""The OpenTelemetry SDK of one `chorus run`: set up from `telemetry` at start, flushed and shut down at stop.

Owns `start_tracing` and `Tracing`. With `telemetry.otlp_endpoint` null nothing here is imported or
made: the spans of `spans.py` and `agent/tracing.py` stay the API's no-ops. Otherwise the process gets
one tracer provider: its resource names the service and this replica (`service.instance.id`, so the
spans of replicas sharing one trace are told apart), its sampler keeps `sample_ratio` of new traces and
follows the parent's decision for a trace continued from the journal, and a batch processor exports
over OTLP/HTTP (protobuf) to `<otlp_endpoint>/v1/traces`. The standard `OTEL_EXPORTER_OTLP_*` variables
(headers, certificates, compression) still apply to the exporter; they never turn tracing on.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from gateway.config import TelemetrySettings, public_url
from gateway.telemetry.spans import provider_installed

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

log = structlog.get_logger(__name__)

TRACES_PATH = "/v1/traces"
EXPORT_TIMEOUT_SECONDS = 5.0  # one export (and the last flush at stop) gives up after this: a gone collector never holds a stop


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a collector's base URL (a URL naming the traces path already is kept)."""
    trimmed = endpoint.rstrip("/")
    return trimmed if trimmed.endswith(TRACES_PATH) else trimmed + TRACES_PATH


class Tracing:
    """The process's tracer provider while it runs; `stop` exports what is still batched, then shuts it down."""

    def __init__(self, provider: TracerProvider, url: str) -> None:
        self._provider = provider
        self.url = url

    async def stop(self) -> None:
        """Flush and shut down (in a worker thread: the last export is a blocking HTTP request)."""
        await asyncio.to_thread(self._provider.shutdown)
        log.info("telemetry.stopped")


def tracer_provider(settings: TelemetrySettings, *, instance_id: str) -> TracerProvider:
    """The SDK's tracer provider for `settings` (its resource and sampler), not yet exporting nor installed."""
    from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    return TracerProvider(
        resource=Resource.create({SERVICE_NAME: settings.service_name, SERVICE_INSTANCE_ID: instance_id}),
        sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
    )


def start_tracing(settings: TelemetrySettings, *, instance_id: str) -> Tracing | None:
    """Install the SDK's tracer provider for this process; None (and nothing imported) when telemetry is off."""
    if settings.otlp_endpoint is None:
        return None
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    url = traces_url(settings.otlp_endpoint)
    provider = tracer_provider(settings, instance_id=instance_id)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url, timeout=EXPORT_TIMEOUT_SECONDS)))
    trace.set_tracer_provider(provider)
    provider_installed()
    log.info("telemetry.started", endpoint=public_url(url), service=settings.service_name, sample_ratio=settings.sample_ratio)
    return Tracing(provider, url)


__all__ = ["EXPORT_TIMEOUT_SECONDS", "TRACES_PATH", "Tracing", "start_tracing", "tracer_provider", "traces_url"]
