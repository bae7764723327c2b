"""Prometheus metrics of one gateway process, in a registry of its own (tests create fresh ones).

Owns the metric names and labels operators scrape from `/metrics`. The gateway
records; the admin server renders. Label values are bounded sets (platform,
trigger, outcome), never chat ids or user text.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]


class Metrics:
    """Every metric the gateway exports."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.messages_in = Counter("chorus_messages_in", "Inbound platform messages accepted", ["platform"], registry=r)
        self.messages_out = Counter("chorus_messages_out", "Messages sent to platforms", ["platform"], registry=r)
        self.turn_seconds = Histogram(
            "chorus_turn_seconds", "Agent turn latency", ["platform"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.llm_tokens = Counter("chorus_llm_tokens", "LLM tokens by direction", ["direction"], registry=r)
        self.compressions = Counter(
            "chorus_compressions", "Context compressions by trigger and outcome", ["trigger", "outcome"], registry=r
        )
        self.facts_dropped = Counter(
            "chorus_facts_dropped", "Fact-ledger lines given up by compressions", ["reason"], registry=r
        )
        self.hygiene_runs = Counter("chorus_hygiene_runs", "Session hygiene compressions", ["result"], registry=r)
        self.queue_depth = Gauge("chorus_queue_depth", "Messages waiting for a busy session", registry=r)
        self.lock_wait_seconds = Histogram(
            "chorus_lock_wait_seconds", "Time waiting for a session lock", buckets=LATENCY_BUCKETS, registry=r
        )
        self.agent_cache = Counter("chorus_agent_cache", "Agent cache events", ["event"], registry=r)
        self.redis_errors = Counter("chorus_redis_errors", "Redis operations that failed (fail-open)", registry=r)
        self.turn_errors = Counter("chorus_turn_errors", "Turns that failed", ["kind"], registry=r)
        self.chat_tokens = Gauge(
            "chorus_chat_tokens", "All-time LLM tokens of every chat, by platform", ["platform", "direction"], registry=r
        )
        # Model names are bounded: model.name, model.allowed and the fallbacks.
        self.spend = Counter("chorus_spend", "Cost of model calls in the units of pricing", ["model"], registry=r)
        self.limit_hits = Counter("chorus_limit_hits", "Messages refused by a limit", ["scope"], registry=r)
        self.live_agents = Gauge("chorus_live_agents", "Session agents live in this process", registry=r)
        # Tool names are bounded: the tools the configured MCP servers list.
        self.tool_calls = Counter("chorus_tool_calls", "MCP tool calls by outcome", ["tool", "outcome"], registry=r)
        self.tool_errors = Counter("chorus_tool_errors", "MCP tool calls that failed", ["tool", "outcome"], registry=r)
        self.tool_seconds = Histogram(
            "chorus_tool_seconds", "MCP tool call latency", ["tool"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.mcp_server_up = Gauge("chorus_mcp_server_up", "MCP server connected (1) or not (0)", ["server"], registry=r)
        self.store_ping_seconds = Gauge("chorus_store_ping_seconds", "Round trip of the last session store ping",
                                        registry=r)
        self.store_errors = Counter("chorus_store_errors", "Session store pings that failed", registry=r)
        self.store_up = Gauge("chorus_store_up", "1 when the session store answered its last ping", registry=r)
        self.store_write_errors = Counter(
            "chorus_store_write_errors", "Turns whose session store write failed for the disk (full or failing); "
            "their messages stay journaled and are run again", registry=r,
        )
        self.store_writable = Gauge("chorus_store_writable", "0 while session store writes fail for the disk", registry=r)
        self.adapter_up = Gauge(
            "chorus_adapter_up", "1 while the platform adapter is receiving (its last poll, receive or heartbeat is "
            "recent), 0 when it stopped", ["platform"], registry=r,
        )
        self.journal_entries = Gauge(
            "chorus_journal_entries", "Unfinished messages of the shared journal: leased by a live replica (claimed) "
            "or past their lease, waiting to be taken over (expired)", ["state"], registry=r,
        )
        self.deadletters = Counter(
            "chorus_deadletters", "Inbound messages quarantined as dead letters, by intake stage", ["stage"], registry=r
        )
        self.task_deaths = Counter(
            "chorus_task_deaths", "Supervised background tasks that died (each is restarted)", ["task"], registry=r
        )
        self.config_changes = Counter(
            "chorus_config_changes", "Runtime config keys changed (API, reload, SIGHUP)", ["source"], registry=r
        )

        self.plugin_errors = Counter(
            "chorus_plugin_errors", "Plugin calls that raised or timed out (the turn went on without them)",
            ["plugin", "kind"], registry=r,
        )

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
