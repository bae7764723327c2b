"""Operations: what an operator watches and tunes while the gateway runs.

Owns `/healthz` and `/readyz` (`health`), Prometheus metrics (`metrics`), logging setup with secrets
redacted (`logs`) and the live configuration holder read for limits (`live_config`).
Knows nothing of platforms or of how a turn runs; the admin API and dashboard live in `gateway.admin`.
"""
