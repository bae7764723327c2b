"""Retention through the live gateway: the planted group chats of `bench/retention_group.py` through `chorus run`.

Each IRC log (facts planted by four of its speakers, `bench.retention_group.plant`)
is sent line by line to `chorus run`, started as a subprocess, through the real
Telegram adapter (python-telegram-bot in webhook mode, against the loopback
Bot API fake of the tests): every line a group message from its speaker, every
`--turn-every` lines a mention of the bot, answered before the next line is
sent. The model is the loopback fake OpenAI server of the tests: chat turns are
echoed, and summary requests get a summary that keeps nothing (`nothing`) or
one that keeps each line of the request with p `--keep` (`random`). The
gateway compresses on its own (hygiene at `--hard-limit` messages, preflight),
as in production. At the end a mention asks for the values: the answering
request the fake model receives is searched for every planted sentence
VERBATIM, and its tokens are compared with the same run with
`compression.fact_ledger: false` (`overhead`).

    .venv/bin/python bench/retention.py --gateway [--gateway-logs 2] [--gateway-messages 1200] [--gateway-hard-limit 300]
"""
from __future__ import annotations

import argparse
import json
import random
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from agent.session_files import read_sessions
from agent.tokens import TokenCounter
from bench.retention import MIN_COMPRESSIONS, TARGET_OVERHEAD, TARGET_RETENTION
from bench.retention_group import GROUP_FILE, GroupLog, plant
from tests.fakes.openai_server import FakeOpenAI, Reply, echo_responder
from tests.fakes.telegram_api import BOT_USERNAME, FakeTelegram, entity, group_chat, message, user
from tests.gateway.daemon import start_daemon, stop_daemon

SUMMARY_MARKER = "You write handoff summaries"
SUMMARY_KINDS = ("nothing", "random")
CONFIGS = ("none", "ledger+words")
TOKEN = "123456:bench-token-not-real"
SECRET = "bench-retention-secret"
GROUP_ID = -100_424_242
REPLY_TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SummaryModel:
    """The fake model's answers: summaries that keep nothing or a random share of lines; chat turns echoed."""

    def __init__(self, kind: str, seed: int, keep: float) -> None:
        self.kind = kind
        self.rng = random.Random(seed)
        self.keep = keep
        self.summaries = 0
        self.last_chat: dict[str, Any] | None = None

    def __call__(self, request: dict[str, Any]) -> Reply:
        first = request["messages"][0].get("content") or ""
        if isinstance(first, str) and first.startswith(SUMMARY_MARKER):
            self.summaries += 1
            if self.kind == "nothing":
                return Reply(content="## Goal\nNone.\n\n## Critical context\nNone.")
            text = "\n".join(str(m.get("content") or "") for m in request["messages"][1:])
            kept = [line for line in text.splitlines() if line.strip() and self.rng.random() < self.keep]
            return Reply(content="## Critical context\n" + ("\n".join(kept[:60]) or "None."))
        self.last_chat = request
        return echo_responder(request)


def _config(path: Path, home: Path, openai: str, telegram: str, ports: dict[str, int], run: GatewayRun,
            ledger: bool) -> None:
    config = {
        "home": str(home),
        "model": {"name": "fake-model", "base_url": openai, "api_key": "sk-bench-not-real",
                  "context_length": run.window},
        "platforms": {
            "web": {"enabled": False},
            "telegram": {
                "enabled": True, "token": TOKEN, "base_url": telegram, "mode": "webhook", "allow_all_users": True,
                "webhook": {"url": "https://bot.example.org/tg", "secret_token": SECRET, "path": "/tg",
                            "listen": "127.0.0.1", "port": ports["telegram"]},
            },
        },
        "admin": {"host": "127.0.0.1", "port": ports["admin"]},
        "compression": {"hygiene_hard_message_limit": run.hard_limit, "fact_ledger": ledger},
        "gateway": {"shutdown_grace_seconds": 1},
        "memory": {"nudge_interval": 0, "flush_min_turns": 0},
        "logging": {"format": "json", "level": "info"},
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


@dataclass(frozen=True, slots=True)
class GatewayRun:
    window: int
    hard_limit: int
    turn_every: int
    keep: float


@dataclass(slots=True)
class Outcome:
    kept: int = 0
    planted: int = 0
    tokens: int = 0
    compressions: int = 0
    fewest_compressions: int = 1 << 30
    lost: list[str] = field(default_factory=list)

    def add(self, other: Outcome) -> None:
        self.kept += other.kept
        self.planted += other.planted
        self.tokens += other.tokens
        self.compressions += other.compressions
        self.fewest_compressions = min(self.fewest_compressions, other.fewest_compressions)
        self.lost.extend(other.lost)


class _Sender:
    """Posts group updates to the gateway's Telegram webhook, one speaker id per nick."""

    def __init__(self, http: aiohttp.ClientSession, port: int) -> None:
        self.http = http
        self.url = f"http://127.0.0.1:{port}/tg"
        self.ids: dict[str, int] = {}
        self.update_id = 1000

    async def say(self, nick: str, text: str, *, mention: bool = False) -> None:
        user_id = self.ids.setdefault(nick, 10_000 + len(self.ids))
        sender = user(user_id, first_name=nick, username=None)
        extra: dict[str, Any] = {}
        if mention:
            text = f"@{BOT_USERNAME} {text}"
            extra["entities"] = [entity(text, f"@{BOT_USERNAME}", "mention")]
        self.update_id += 1
        body = json.dumps({"update_id": self.update_id, "message": message(group_chat(GROUP_ID), text, sender=sender,
                                                                           **extra)})
        headers = {"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET}
        async with self.http.post(self.url, data=body, headers=headers) as response:
            if response.status != 200:
                raise RuntimeError(f"the webhook answered {response.status}")


async def run_log(log: GroupLog, kind: str, config: str, run: GatewayRun, seed: int, counter: TokenCounter) -> Outcome:
    """One planted log through `chorus run`; the planted facts found in the final answering request."""
    model = SummaryModel(kind, seed, run.keep)
    with tempfile.TemporaryDirectory(prefix="chorus-retention-") as tmp:
        home = Path(tmp) / "home"
        async with FakeOpenAI(model) as openai, FakeTelegram(token=TOKEN) as telegram:
            ports = {"telegram": _free_port(), "admin": _free_port()}
            path = Path(tmp) / "config.yaml"
            _config(path, home, openai.base_url, f"http://127.0.0.1:{telegram.port}", ports, run, config != "none")
            process, log_lines = await start_daemon(path)
            try:
                async with aiohttp.ClientSession() as http:
                    sender = _Sender(http, ports["telegram"])
                    answered = 0
                    for index, (nick, text) in enumerate(log.lines, 1):
                        await sender.say(nick, text)
                        if index % run.turn_every == 0:
                            await sender.say(nick, "what do you think?", mention=True)
                            answered += 1
                            await telegram.wait_for_calls("sendMessage", answered, timeout=REPLY_TIMEOUT)
                    await sender.say("asker", "list every value that was noted here", mention=True)
                    await telegram.wait_for_calls("sendMessage", answered + 1, timeout=REPLY_TIMEOUT)
            except TimeoutError:
                problems = [line for line in log_lines if line.get("level") in ("warning", "error")]
                raise RuntimeError(f"no reply within {REPLY_TIMEOUT:.0f} s; the gateway logged {problems[-3:]}") from None
            finally:
                await stop_daemon(process)
    request = model.last_chat or {"messages": []}
    sent = "\n".join(str(m.get("content") or "") for m in request["messages"])
    lost = [fact for fact in log.facts if fact not in sent]
    return Outcome(
        kept=len(log.facts) - len(lost), planted=len(log.facts), tokens=counter.count_text(sent),
        compressions=model.summaries, fewest_compressions=model.summaries, lost=lost,
    )


async def run_gateway(args: argparse.Namespace, counter: TokenCounter) -> int:
    path = Path(args.data) / GROUP_FILE
    if not path.is_file():
        print(f"missing {path}", file=sys.stderr)
        return 2
    run = GatewayRun(args.gateway_window, args.gateway_hard_limit, args.turn_every, args.keep)
    records = list(read_sessions(path))[: args.gateway_logs or None]
    table = {(kind, config): Outcome() for kind in SUMMARY_KINDS for config in CONFIGS}
    print(
        f"gateway: chorus run + Telegram (webhook, PTB) + fake OpenAI; first {args.gateway_messages} lines of "
        f"{len(records)} logs, hard limit {run.hard_limit} messages, window {run.window:,}, a mention every "
        f"{run.turn_every} lines"
    )
    for index, record in enumerate(records):
        log = plant(record, args.gateway_messages)
        for kind in SUMMARY_KINDS:
            for config in CONFIGS:
                table[(kind, config)].add(await run_log(log, kind, config, run, index + 1, counter))
        print(f"  {record.id[:60]:<60} {len(log.lines):>5} lines", file=sys.stderr)
    return _verdict(table)


def _verdict(table: dict[tuple[str, str], Outcome]) -> int:
    print(f"\n{'summary':<9} {'sections':<13} {'kept verbatim':>15} {'request tokens':>15} {'overhead':>9} "
          f"{'summaries':>9}")
    status = 0
    for kind in SUMMARY_KINDS:
        base = table[(kind, "none")]
        for config in CONFIGS:
            tally = table[(kind, config)]
            share = tally.kept / tally.planted if tally.planted else 0.0
            overhead = tally.tokens / base.tokens - 1 if base.tokens else 0.0
            shown = f"{overhead:+.1%}" if config != "none" else "-"
            print(f"{kind:<9} {config:<13} {tally.kept:>5}/{tally.planted:<4}{share:>6.1%} {tally.tokens:>15,} "
                  f"{shown:>9} {tally.compressions:>9}")
            if config == "none":
                continue
            kept_ok = share >= TARGET_RETENTION
            cost_ok = overhead <= TARGET_OVERHEAD
            enough = tally.fewest_compressions >= MIN_COMPRESSIONS
            status |= not (kept_ok and cost_ok and enough)
            print(f"TARGET {kind}: kept >= {TARGET_RETENTION:.0%} {'MET' if kept_ok else 'MISSED'}; overhead <= "
                  f"{TARGET_OVERHEAD:.0%} {'MET' if cost_ok else 'MISSED'}; >= {MIN_COMPRESSIONS} compressions per "
                  f"log {'yes' if enough else 'NO'} (fewest {tally.fewest_compressions})")
            if tally.lost:
                print("  lost: " + "; ".join(tally.lost[:6]))
    return status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("gateway mode (--gateway; --turn-every and --keep are shared)")
    group.add_argument("--gateway-logs", type=int, default=2, help="the first N logs (0: all)")
    group.add_argument("--gateway-messages", type=int, default=1200, help="lines of each log sent")
    group.add_argument("--gateway-hard-limit", type=int, default=300, help="compression.hygiene_hard_message_limit")
    group.add_argument("--gateway-window", type=int, default=32_000, help="model.context_length")


__all__ = ["add_arguments", "run_gateway", "run_log"]
