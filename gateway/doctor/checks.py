"""The individual doctor checks. Each is independent and never raises: a failure is a `Check` with its fix."""
from __future__ import annotations

import asyncio
import errno
import importlib
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import redis.asyncio as aioredis
from pydantic import BaseModel, SecretStr

from adapters.base import PlatformAdapter
from agent.context.factory import auxiliary_endpoint
from agent.messages import user
from agent.model_client import OpenAIModelClient
from agent.model_windows import window_key
from agent.store.probe import probe_store
from chorus_errors import ConfigError, ModelError
from gateway.config import ChorusConfig, public_url
from gateway.platforms.web_login import EXPOSED_FIX, WEB_TOKEN_FILE, exposed_web_problem, token_required
from gateway.stores import window_store

PROBE_TIMEOUT_SECONDS = 10.0
HEALTH_PROBE_SECONDS = 2.0  # a running chorus answers /healthz at once; anything slower is not ours
PLATFORM_NAMES = ("telegram", "discord", "slack")
DEFAULT_MODEL_URL = "https://api.openai.com/v1"  # what the OpenAI client uses without a base_url


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False  # ok (nothing stops a start) but worth the operator's attention


def check_web(config: ChorusConfig) -> Check:
    """The web chat's login: a token off loopback, or `auth: none` written explicitly (a warning)."""
    web = config.platforms.web
    if not web.enabled:
        return Check("platforms.web.auth", True, "web chat disabled")
    if (problem := exposed_web_problem(web)) is not None:
        return Check("platforms.web.auth", True, problem, EXPOSED_FIX, warning=True)
    if not token_required(web):
        return Check("platforms.web.auth", True, f"no login: {web.host} is loopback (only this machine reaches it)")
    source = "platforms.web.token" if web.token is not None and web.token.get_secret_value().strip() \
        else f"generated at the first start in {config.home_dir / WEB_TOKEN_FILE}"
    return Check("platforms.web.auth", True, f"sign-in token required on {web.host} ({source})")


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def check_config(path: Path | None) -> Check:
    if path is None:
        return Check("config", True, "no config file found ($CHORUS_CONFIG unset, no ./config.yaml): built-in defaults")
    return Check("config", True, f"valid: read {path.resolve()}")


def check_home(config: ChorusConfig) -> Check:
    """Whether `home` is (or can be created) writable, without creating or writing anything."""
    home = config.home_dir
    existing = home
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return Check("home", False, f"{existing} is not a directory", "set `home:` to a writable directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        return Check("home", False, f"{existing} is not writable", "set `home:` to a writable directory")
    if existing != home:
        return Check("home", True, f"{home} does not exist yet; chorus run creates it ({existing} is writable)")
    return Check("home", True, f"{home} is writable")


async def check_store(config: ChorusConfig) -> Check:
    """The session store: reachable, migrated, writable, and which mode the gateway runs in."""
    probe = await asyncio.to_thread(probe_store, config.store.url, config.home_dir)
    if not probe.ok:
        return Check("store", False, f"{probe.mode}: {probe.detail}", probe.fix)
    alone = probe.mode.startswith("postgresql") and not config.redis.url
    note = "; redis.url is unset, so run one replica only (replicas coordinate turns through Redis)" if alone else ""
    return Check("store", True, f"{probe.mode}: {probe.detail}{note}")
def _listening_ports(config: ChorusConfig) -> list[tuple[str, str, int]]:
    """(setting, host, port) of every port `chorus run` would listen on (0: any free port, skipped)."""
    found = [("admin.port", config.admin.host, config.admin.port)]
    web = config.platforms.web
    if web.enabled:
        found.append(("platforms.web.port", web.host, web.port))
    telegram = config.platforms.telegram
    if telegram.enabled and telegram.mode == "webhook":
        found.append(("platforms.telegram.webhook.port", telegram.webhook.listen, telegram.webhook.port))
    return [entry for entry in found if entry[2] != 0]


async def check_ports(config: ChorusConfig) -> Check:
    """Each configured port can be bound now (the probe socket is closed at once).

    Busy ports are fine when a chorus answers `/healthz` on the configured admin port: doctor is then run beside
    its own running gateway, which holds them.
    """
    busy: list[str] = []
    for setting, host, port in _listening_ports(config):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            try:
                probe.bind((host, port))
            except OSError as exc:
                why = "in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or "unavailable")
                busy.append(f"{setting} {host}:{port} ({why})")
    listed = ", ".join(f"{host}:{port}" for _s, host, port in _listening_ports(config)) or "none fixed"
    if busy and await _chorus_answers(config.admin.host, config.admin.port):
        return Check("ports", True, f"held by the running chorus (its /healthz answered on "
                                    f"{config.admin.host}:{config.admin.port}): {listed}")
    if busy:
        return Check("ports", False, "cannot listen on " + ", ".join(busy),
                     "stop the program using it (another chorus?) or choose another port")
    return Check("ports", True, f"free: {listed}")


async def _chorus_answers(host: str, port: int) -> bool:
    """True when a chorus admin server answers `/healthz` at host:port."""
    if port == 0:
        return False
    address = f"[{host}]" if ":" in host else host
    if address in ("0.0.0.0", "[::]"):
        address = "127.0.0.1"
    timeout = aiohttp.ClientTimeout(total=HEALTH_PROBE_SECONDS)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, \
                session.get(f"http://{address}:{port}/healthz") as response:
            body = await response.json(content_type=None)
    except (TimeoutError, aiohttp.ClientError, ValueError):
        return False
    return response.status == 200 and isinstance(body, dict) and body.get("status") == "ok"


async def check_redis(config: ChorusConfig) -> Check:
    if not config.redis.url:
        return Check("redis", True, "not configured: embedded in-process coordination (single machine)")
    client = aioredis.Redis.from_url(config.redis.url, socket_timeout=2, socket_connect_timeout=2)
    try:
        await client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
        return Check("redis", False, f"cannot reach redis.url {public_url(config.redis.url)} ({type(exc).__name__})",
                     "start Redis there or fix redis.url (null = embedded backend)")
    finally:
        await client.aclose()
    return Check("redis", True, f"reachable at {public_url(config.redis.url)}")


async def _probe_model(name: str, model: str, base_url: str | None, api_key: str | None) -> Check:
    client = OpenAIModelClient(model=model, base_url=base_url, api_key=api_key, timeout_seconds=PROBE_TIMEOUT_SECONDS)
    try:
        await client.complete([user("ping")], max_tokens=1)
    except ModelError as error:
        fixes = {401: f"check {name}.api_key", 403: f"check {name}.api_key's access to {model}",
                 404: f"check {name}.name / {name}.base_url"}
        fix = fixes.get(error.status or 0, f"check {name}.base_url and that the server is up")
        return Check(name, False, f"{error} (tried {base_url or DEFAULT_MODEL_URL + ', the default'})", fix)
    finally:
        await client.close()
    return Check(name, True, f"{model} answered at {base_url or DEFAULT_MODEL_URL + ' (the default)'}")


async def check_model(config: ChorusConfig) -> Check:
    model = config.model
    if not model.name:
        return Check("model", False, "no model configured",
                     "set model.name, model.base_url and model.api_key (or OPENAI_API_KEY via ${OPENAI_API_KEY})")
    return await _probe_model("model", model.name, model.base_url, _secret(model.api_key))


async def check_fallbacks(config: ChorusConfig) -> list[Check]:
    """Each of `model.fallbacks`, probed like the main model (a fallback that is down helps nobody)."""
    checks = []
    for index, fallback in enumerate(config.model.fallbacks):
        key = _secret(fallback.api_key) or _secret(config.model.api_key)
        checks.append(await _probe_model(
            f"model.fallbacks[{index}]", fallback.name, fallback.base_url or config.model.base_url, key
        ))
    return checks


def check_windows(config: ChorusConfig) -> list[Check]:
    """Windows learned from providers' overflow errors that are smaller than the configured ones."""
    learned = window_store(config).load()
    model = config.model
    configured = [("model", model.name or "", model.base_url, model.context_length)] + [
        (f"model.fallbacks[{i}]", f.name, f.base_url or model.base_url, f.context_length)
        for i, f in enumerate(model.fallbacks)
    ]
    checks = []
    for name, model_name, base_url, context_length in configured:
        window = learned.get(window_key(model_name, base_url))
        if window is not None and window.tokens < context_length:
            how = "stated by the provider" if window.stated else "assumed after an overflow without a figure"
            checks.append(Check(
                f"{name}.context_length", False,
                f"{model_name} rejected requests above {window.tokens:,} tokens ({how}); configured {context_length:,}",
                f"set {name}.context_length: {window.tokens} (or start the server with a larger context)",
            ))
    return checks
SUMMARY_WINDOW_FIX = "choose an auxiliary.compression.model with a window at least model.context_length, or unset it"


def summary_window_problem(config: ChorusConfig) -> str | None:
    """Why the summary model cannot read what it must summarise, or None (`run` warns, `doctor` fails)."""
    aux_window, main_window = config.auxiliary.compression.context_length, config.model.context_length
    if aux_window is not None and aux_window < main_window:
        return f"summary model window {aux_window:,} is smaller than the main model's {main_window:,}"
    return None


async def check_auxiliary(config: ChorusConfig) -> Check:
    problem = summary_window_problem(config)
    if problem is not None:
        return Check("auxiliary.compression", False, problem, SUMMARY_WINDOW_FIX)
    endpoint = auxiliary_endpoint(config.model, config.auxiliary)
    if endpoint is None or endpoint.model is None:
        return Check("auxiliary.compression", True, "uses the main model for summaries")
    return await _probe_model("auxiliary.compression", endpoint.model, endpoint.base_url, _secret(endpoint.api_key))


async def check_platform(config: ChorusConfig, platform: str) -> Check:
    settings: BaseModel = getattr(config.platforms, platform)
    name = f"platforms.{platform}"
    try:
        module = importlib.import_module(f"gateway.platforms.{platform}")
        build: Callable[[BaseModel], PlatformAdapter] = getattr(module, f"build_{platform}")
        adapter = build(settings)
    except ConfigError as exc:
        return Check(name, False, str(exc) + config.env_hint(exc.key), f"set the missing key in {name}")
    except (ImportError, AttributeError):
        return Check(name, False, f"the {platform} adapter is not available in this build", f"disable {name}")
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
            result = await adapter.probe()
    except Exception as exc:  # noqa: BLE001
        return Check(name, False, f"probe failed ({type(exc).__name__})", f"check {name} and the network")
    ok, detail = result.ok, result.detail
    return Check(name, ok, detail, "" if ok else f"fix {name} as the detail says")


async def run_checks(config: ChorusConfig, *, path: Path | None = None) -> list[Check]:
    """Every check, in a stable order; independent checks run concurrently (`path`: the config file read)."""
    platforms = [p for p in PLATFORM_NAMES if getattr(config.platforms, p).enabled]
    from gateway.doctor.mcp import check_mcp  # imports this module's Check
    from gateway.doctor.plugins import check_plugins  # imports this module's Check

    results = await asyncio.gather(
        check_store(config), check_redis(config), check_model(config), check_auxiliary(config),
        *(check_platform(config, p) for p in platforms),
    )
    servers = await check_mcp(config.mcp.servers)
    fallbacks = await check_fallbacks(config)
    plugins = await check_plugins(config)
    return [
        check_config(path), check_home(config), await check_ports(config), check_web(config), *results, *fallbacks,
        *check_windows(config), *plugins, *servers,
    ]
