"""Plugins through entry points, as `chorus run` builds the gateway: load by name, refuse bad ones, isolate failures.

The example package in `examples/chorus-example-plugin` is installed with pip
into a directory of its own (the shared venv is not touched) and put on
sys.path, where `importlib.metadata` finds its entry points as it would in a
site-packages. Plugins meant to fail are written as installed distributions
by hand (tests/plugin_dists.py).
"""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from structlog.testing import capture_logs

from agent.loop import RECALL_HEADER
from chorus_errors import ConfigError
from gateway.build import build_gateway
from gateway.doctor.plugins import check_plugins
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.daemon import start_daemon
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import chat, make_config
from tests.gateway.replicas import web_port
from tests.gateway.run_harness import run_like_chorus
from tests.plugin_dists import installed_dist, on_sys_path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chorus-example-plugin"
TELEGRAM_ONLY = {"web": {"enabled": False}, "telegram": {"allowed_users": ["u1", "u2"]}}

BROKEN_PLUGINS = '''
from agent.context.factory import build_compressor
from agent.memory.providers import MemoryProvider


class FlakyMemory(MemoryProvider):
    name = "flaky-memory"

    async def prefetch(self, chat_id, user_id, query):
        raise RuntimeError("recall service down")

    async def sync(self, chat_id, user_id, messages):
        return None


def memory_without_key():
    raise RuntimeError("MEMO_API_KEY is not set")


def engine_without_key(settings, model_settings, aux_settings, *, counter, sections):
    raise RuntimeError("ENGINE_API_KEY is not set")


def flaky_engine(settings, model_settings, aux_settings, *, counter, sections):
    engine = build_compressor(settings, model_settings, aux_settings, counter=counter, sections=sections)

    def broken(*args, **kwargs):
        raise RuntimeError("engine bug")

    engine.should_compress_preflight = broken
    engine.record_usage = broken
    return engine
'''


@pytest.fixture(scope="module")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin installed with pip, as a third party would, into a --target directory."""
    root = tmp_path_factory.mktemp("example-plugin")
    source = shutil.copytree(EXAMPLE, root / "source")  # pip builds in the tree: keep the repo's copy clean
    site = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(source)],
        check=True, capture_output=True,
    )
    return site


@pytest.fixture()
def example_plugin(example_site: Path) -> Iterator[Path]:
    with on_sys_path(example_site):
        yield example_site


@pytest.fixture()
def broken_plugins(tmp_path: Path) -> Iterator[Path]:
    points = {
        "chorus.memory_providers": {
            "flaky-memory": "chorus_broken_plugins:FlakyMemory",
            "keyless-memory": "chorus_broken_plugins:memory_without_key",
            "missing-memory": "chorus_not_installed_module:Memory",
        },
        "chorus.context_engines": {
            "keyless-engine": "chorus_broken_plugins:engine_without_key",
            "flaky-engine": "chorus_broken_plugins:flaky_engine",
            "missing-engine": "chorus_not_installed_module:engine",
        },
    }
    with installed_dist(tmp_path / "site", "chorus-broken-plugins", points,
                        {"chorus_broken_plugins": BROKEN_PLUGINS}) as site:
        yield site


async def test_example_plugin_installed_with_pip_is_loaded_by_name(
    example_plugin: Path, fake_openai: FakeOpenAI, home: Path
) -> None:
    """keyword-memory recalls an earlier line into the model's request, in that chat only; /status names both."""
    chat = FakePlatform("telegram")
    config = make_config(home, fake_openai.base_url, platforms=TELEGRAM_ONLY, model={"context_length": 400_000},
                         memory={"provider": "keyword-memory"}, context={"engine": "early-compressor"})
    async with run_like_chorus(config, adapters={"telegram": chat}) as (gateway, _ops):
        await chat.inject("my dog is called Rex")
        await chat.wait_text("echo: my dog is called Rex")
        await gateway.parts.runner.memory_synced()
        await chat.inject("what is my dog called?")
        await chat.wait_text("echo: what is my dog called?")
        await chat.inject("what is my dog called?", chat_id="c2", user_id="u2")
        await chat.wait_text("echo: what is my dog called?")
        await chat.inject("/status")
        status = (await chat.wait_text("context engine:")).text
    prompts = [str(request["messages"][0]["content"]) for request in fake_openai.requests]
    assert f"{RECALL_HEADER}\nmy dog is called Rex" in prompts[1]
    assert RECALL_HEADER not in prompts[0] and RECALL_HEADER not in prompts[2]  # nothing yet; another chat
    assert "context engine: early-compressor" in status and "memory provider: keyword-memory" in status
    assert "compression threshold: 120,000" in status  # 400,000 x 0.3: the plugin's ratio, not the built-in 0.5


async def test_chorus_run_loads_the_pip_installed_example_by_name(
    example_site: Path, fake_openai: FakeOpenAI, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`chorus run` as a process, the plugin on its PYTHONPATH as a site-packages would be: recall reaches the model."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(example_site), os.environ.get("PYTHONPATH")])))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "home": str(home),
        "model": {"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test-not-real"},
        "platforms": {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
        "admin": {"host": "127.0.0.1", "port": 0}, "gateway": {"shutdown_grace_seconds": 1},
        "memory": {"provider": "keyword-memory", "nudge_interval": 0, "flush_min_turns": 0},
        "context": {"engine": "early-compressor"}, "logging": {"format": "json", "level": "info"},
    }), encoding="utf-8")
    process, lines = await start_daemon(config)
    try:
        async with chat(web_port(lines)) as tab:
            await tab.say("my cat is called Tom")
            first = await tab.reply(timeout=30)
            # The first turn's sync runs after its reply is delivered, off the lane: ask until it has landed
            # (it takes a few event-loop steps; the in-process test above waits on it exactly).
            for _attempt in range(5):
                await tab.say("what is my cat called?")
                second = await tab.reply(timeout=30)
                if RECALL_HEADER in str(fake_openai.requests[-1]["messages"][0]["content"]):
                    break
            await tab.say("/status")
            status = await tab.reply(timeout=30)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert (first, second) == ("echo: my cat is called Tom", "echo: what is my cat called?")
    assert f"{RECALL_HEADER}\nmy cat is called Tom" in str(fake_openai.requests[-1]["messages"][0]["content"])
    assert RECALL_HEADER not in str(fake_openai.requests[0]["messages"][0]["content"])
    assert "context engine: early-compressor" in status and "memory provider: keyword-memory" in status


async def test_doctor_lists_installed_plugins_and_the_chosen_ones(example_plugin: Path, home: Path) -> None:
    config = make_config(home, "http://127.0.0.1:9/v1", memory={"provider": "keyword-memory"},
                         context={"engine": "early-compressor"})
    engine, memory = await check_plugins(config)
    assert (engine.name, engine.ok, memory.name, memory.ok) == ("context.engine", True, "memory.provider", True)
    assert "using early-compressor (plugin, loaded)" in engine.detail and "compressor, " in engine.detail
    assert "using keyword-memory" in memory.detail and "keyword-memory" in memory.detail.split("installed:")[1]
    none_chosen = await check_plugins(make_config(home, "http://127.0.0.1:9/v1"))
    assert "using compressor (built in)" in none_chosen[0].detail and "early-compressor" in none_chosen[0].detail
    assert none_chosen[1].ok and "none chosen" in none_chosen[1].detail


@pytest.mark.parametrize("key,section,name,installed", [
    ("memory.provider", "memory", "honcho", "flaky-memory"),
    ("context.engine", "context", "lcm", "flaky-engine"),
])
def test_unknown_plugin_is_a_config_error_listing_the_installed_ones(
    broken_plugins: Path, fake_openai: FakeOpenAI, home: Path, key: str, section: str, name: str, installed: str
) -> None:
    field = key.split(".")[1]
    config = make_config(home, fake_openai.base_url, **{section: {field: name}})
    with pytest.raises(ConfigError) as caught:
        build_gateway(config)
    assert caught.value.key == key
    assert repr(name) in str(caught.value) and installed in str(caught.value)


@pytest.mark.parametrize("key,section,name,cause", [
    ("memory.provider", "memory", "keyless-memory", "MEMO_API_KEY is not set"),
    ("memory.provider", "memory", "missing-memory", "failed to import"),
    ("context.engine", "context", "keyless-engine", "ENGINE_API_KEY is not set"),
    ("context.engine", "context", "missing-engine", "failed to import"),
])
async def test_plugin_that_fails_at_start_stops_the_start_with_a_clear_error(
    broken_plugins: Path, fake_openai: FakeOpenAI, home: Path, key: str, section: str, name: str, cause: str
) -> None:
    """A plugin whose factory raises or whose module does not import: ConfigError naming key, name and cause."""
    field = key.split(".")[1]
    config = make_config(home, fake_openai.base_url, **{section: {field: name}})
    with pytest.raises(ConfigError) as caught:
        async with run_like_chorus(config):
            pass
    assert caught.value.key == key and repr(name) in str(caught.value) and cause in str(caught.value)
    row = next(check for check in await check_plugins(config) if check.name == key)
    assert not row.ok and cause in row.detail


@pytest.mark.parametrize("key,section,name,kind,event", [
    ("memory.provider", "memory", "flaky-memory", "memory_provider", "memory_provider.failed"),
    ("context.engine", "context", "flaky-engine", "context_engine", "context_engine.failed"),
])
async def test_plugin_raising_at_run_time_is_isolated(
    broken_plugins: Path, fake_openai: FakeOpenAI, home: Path, key: str, section: str, name: str, kind: str, event: str
) -> None:
    """The turn is answered without the plugin; its failures are logged and counted in chorus_plugin_errors."""
    field = key.split(".")[1]
    chat = FakePlatform("telegram")
    config = make_config(home, fake_openai.base_url, platforms=TELEGRAM_ONLY, **{section: {field: name}})
    async with run_like_chorus(config, adapters={"telegram": chat}) as (_gateway, ops):
        with capture_logs() as logs:
            await chat.inject("hello there")
            await chat.wait_text("echo: hello there")
    failures = [entry for entry in logs if entry["event"] == event]
    errors = ops.metrics.registry.get_sample_value("chorus_plugin_errors_total", {"plugin": name, "kind": kind})
    assert failures and errors == len(failures)
    assert {entry["log_level"] for entry in failures} == {"warning"}
    assert "engine bug" not in str(failures) and "recall service down" not in str(failures)  # type only, no text
