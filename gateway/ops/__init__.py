"""Operations: what an operator watches and tunes while the gateway runs.

Owns `/healthz` and `/readyz` (`health`), Prometheus metrics (`metrics`), logging setup with secrets
redacted (`logs`), the live configuration holder read for limits (`live_config`),
the typed domain events metrics read (`events`) and the supervisor that restarts a dead background task (`supervise`).
Knows nothing of platforms or of how a turn runs; the admin API and dashboard live in `gateway.admin`.
"""
