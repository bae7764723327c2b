"""Traces of each message across replicas: the SDK's setup (`setup.py`) and the gateway's stage spans (`spans.py`).

Import the module you need: `spans` uses the OpenTelemetry API only; `setup` loads the SDK, and only when
`telemetry.otlp_endpoint` is set.
"""
