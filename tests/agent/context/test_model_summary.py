"""The LLM path through the real `openai` client against a fake server: tiers 1-4 of docs/design.md §3.6."""
from __future__ import annotations

import socket

import pytest

from agent.context import ModelSummarizer
from agent.context._handoff import is_handoff
from agent.model_client import OpenAIModelClient
from tests.agent.context.compressor_helpers import Clock, Events, make, taubench
from tests.fakes.openai_server import FakeOpenAI, Reply


def client(fake: FakeOpenAI, model: str, *, timeout: float = 5.0) -> OpenAIModelClient:
    return OpenAIModelClient(model=model, base_url=fake.base_url, api_key="test-key", timeout_seconds=timeout)


def models(fake: FakeOpenAI) -> list[str]:
    return [request["model"] for request in fake.requests]


async def test_summary_through_the_openai_client(fake_openai: FakeOpenAI) -> None:
    """The main model writes the summary; think blocks are stripped; no max_tokens on the wire."""
    fake_openai.push(Reply(content="<think>let me plan</think>## Goal\nRebook flight HAT170 to May 20"))
    summarizer = ModelSummarizer(client(fake_openai, "main-model"))
    engine = make(summarizer=summarizer, context_length=16_000)
    result = await engine.compress(taubench(), trigger="manual", force=True)
    await summarizer.close()
    assert result.summary_kind == "llm"
    handoff = next(m for m in result.messages if is_handoff(m)).text
    assert "## Goal\nRebook flight HAT170 to May 20" in handoff and "let me plan" not in handoff
    request = fake_openai.requests[0]
    assert request["model"] == "main-model" and "max_tokens" not in request
    assert "## Historical task snapshot" in request["messages"][1]["content"]


@pytest.mark.parametrize(
    "aux_failure",
    [
        Reply(status=500),
        Reply(status=503),
        Reply(status=404, error_code="model_not_found"),
        Reply(status=400, error_code="context_length_exceeded"),
        Reply(status=413, raw_body="<html>413 Request Entity Too Large</html>"),
        Reply(status=429, headers={"retry-after-ms": "10"}),
        Reply(content=""),
        Reply(empty_choices=True),
    ],
    ids=["500", "503", "404", "context_length_exceeded", "413", "429", "empty", "no-choices"],
)
async def test_auxiliary_failure_retries_on_the_main_model(fake_openai: FakeOpenAI, aux_failure: Reply) -> None:
    """Tier 1: any non-auth failure of the auxiliary model is retried once on the main model."""
    fake_openai.push(aux_failure, Reply(content="## Goal\nfrom the main model"))
    summarizer = ModelSummarizer(client(fake_openai, "main-model"), client(fake_openai, "aux-model"))
    engine = make(summarizer=summarizer, context_length=16_000)
    result = await engine.compress(taubench(), trigger="manual", force=True)
    await summarizer.close()
    assert models(fake_openai) == ["aux-model", "main-model"]
    assert result.summary_kind == "llm"
    assert "from the main model" in (result.summary_text or "")
    assert engine.state.cooldown_until == 0.0


async def test_auxiliary_timeout_retries_on_the_main_model(fake_openai: FakeOpenAI) -> None:
    """Tier 1: an auxiliary timeout falls back to the main model."""
    fake_openai.push(Reply(content="late", delay_seconds=0.6), Reply(content="## Goal\nG"))
    summarizer = ModelSummarizer(client(fake_openai, "main-model"), client(fake_openai, "aux-model", timeout=0.2))
    result = await make(summarizer=summarizer, context_length=16_000).compress(taubench(), trigger="manual", force=True)
    await summarizer.close()
    assert (models(fake_openai), result.summary_kind) == (["aux-model", "main-model"], "llm")


@pytest.mark.parametrize(
    "failure",
    [
        Reply(status=413),
        Reply(status=400, error_code="context_length_exceeded"),
        Reply(status=429, headers={"retry-after-ms": "10"}),
        Reply(status=500),
        Reply(content="   "),
    ],
    ids=["413", "context_length_exceeded", "429", "500", "empty"],
)
async def test_summary_failure_gives_fallback_and_cooldown(fake_openai: FakeOpenAI, failure: Reply) -> None:
    """Tiers 2-3: a failed summary gives the deterministic fallback and a 60 s cooldown."""
    clock = Clock()
    fake_openai.push(failure)
    summarizer = ModelSummarizer(client(fake_openai, "main-model"))
    engine = make(summarizer=summarizer, context_length=16_000, clock=clock)
    result = await engine.compress(taubench(), trigger="manual", force=True)
    await summarizer.close()
    assert (result.outcome, result.summary_kind) == ("compressed", "fallback")
    assert "continuity anchors" in (result.summary_text or "")
    assert engine.state.cooldown_until - clock() == 60
    assert not engine.should_compress(10**6)


async def test_summary_timeout_gives_fallback(fake_openai: FakeOpenAI) -> None:
    """A main-model timeout gives the fallback summary and starts the cooldown ladder."""
    clock = Clock()
    fake_openai.push(Reply(content="late", delay_seconds=0.6))
    summarizer = ModelSummarizer(client(fake_openai, "main-model", timeout=0.2))
    engine = make(summarizer=summarizer, context_length=16_000, clock=clock)
    result = await engine.compress(taubench(), trigger="manual", force=True)
    await summarizer.close()
    assert result.summary_kind == "fallback"
    assert (engine.state.cooldown_until - clock(), engine.state.cooldown_step) == (60, 1)


async def test_auth_failure_aborts_and_keeps_messages(fake_openai: FakeOpenAI) -> None:
    """Tier 4: 401 aborts without trying the main model; messages unchanged; the user is told the fix."""
    fake_openai.push(Reply(status=401, error_code="invalid_api_key"))
    events = Events()
    summarizer = ModelSummarizer(client(fake_openai, "main-model"), client(fake_openai, "aux-model"))
    engine = make(summarizer=summarizer, context_length=16_000)
    original = taubench()
    result = await engine.compress(original, trigger="manual", force=True, on_event=events)
    await summarizer.close()
    assert (result.outcome, result.messages) == ("aborted", original)
    assert models(fake_openai) == ["aux-model"]
    assert "rejected the credentials (401)" in result.reason and "/compress, or start a new session" in result.reason
    assert events.kinds == ["started", "aborted"]
    assert "test-key" not in result.reason


async def test_abort_on_summary_failure_setting(fake_openai: FakeOpenAI) -> None:
    """Tier 4: with abort_on_summary_failure a 500 aborts instead of using the fallback."""
    fake_openai.push(Reply(status=500))
    summarizer = ModelSummarizer(client(fake_openai, "main-model"))
    engine = make(summarizer=summarizer, context_length=16_000, abort_on_summary_failure=True)
    result = await engine.compress(taubench(), trigger="manual", force=True)
    await summarizer.close()
    assert result.outcome == "aborted" and "abort_on_summary_failure" in result.reason


async def test_network_down_aborts() -> None:
    """Tier 4: an unreachable endpoint (connection refused) aborts and keeps the messages."""
    with socket.socket() as probe:  # bound, never listening, kept while used: refused, and no one else can take it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        down = OpenAIModelClient(model="main-model", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", timeout_seconds=2)
        summarizer = ModelSummarizer(down)
        original = taubench()
        result = await make(summarizer=summarizer, context_length=16_000).compress(original, trigger="manual", force=True)
        await summarizer.close()
    assert (result.outcome, result.messages) == ("aborted", original)
    assert "network down" in result.reason


async def test_iterative_update_over_the_wire(fake_openai: FakeOpenAI) -> None:
    """The second compression sends the first summary as PREVIOUS SUMMARY to the model."""
    fake_openai.push(Reply(content="## Goal\nfirst goal"), Reply(content="## Goal\nsecond goal"))
    summarizer = ModelSummarizer(client(fake_openai, "main-model"))
    engine = make(summarizer=summarizer, context_length=16_000)
    first = await engine.compress(taubench(), trigger="manual", force=True)
    grown = [*first.messages, *[m for m in taubench(1)[1:40] if m.role != "system"]]
    second = await engine.compress(grown, trigger="manual", force=True)
    await summarizer.close()
    prompt = fake_openai.requests[1]["messages"][1]["content"]
    assert "PREVIOUS SUMMARY:\n## Goal\nfirst goal" in prompt
    assert "second goal" in (second.summary_text or "")
