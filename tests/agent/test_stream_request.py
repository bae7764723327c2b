"""The streaming POST (`agent._stream_request`) fails exactly as the SDK's own request path, over a real socket."""
from __future__ import annotations

import socket

import openai
import pytest

from agent.messages import user
from agent.model_client import OpenAIModelClient, _post
from chorus_errors import ContextOverflow, ModelAuthError, ModelError, ModelUnavailable, RateLimited
from tests.fakes.openai_server import FakeOpenAI, Reply

BODY = b'{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"stream":true}'
NGINX_413 = "<html><head><title>413 Request Entity Too Large</title></head><body>nginx</body></html>"
REPLIES = [
    Reply(status=429, headers={"retry-after": "3"}, error_code="rate_limit_exceeded"),
    Reply(status=400, error_code="context_length_exceeded"),
    Reply(status=413, raw_body=NGINX_413),
    Reply(status=401, error_type="invalid_api_key"),
    Reply(status=403),
    Reply(status=404, error_code="model_not_found"),
    Reply(status=422),
    Reply(status=503, raw_body="upstream connect error"),
    Reply(status=418),
]


def _client(fake: FakeOpenAI, **kwargs: float) -> OpenAIModelClient:
    return OpenAIModelClient(model="fake-model", base_url=fake.base_url, api_key="sk-test", **kwargs)


@pytest.mark.parametrize("reply", REPLIES, ids=[str(r.status) for r in REPLIES])
async def test_status_errors_match_the_sdk(fake_openai: FakeOpenAI, reply: Reply) -> None:
    """Same class, message, body, status and headers as the SDK raises for the same answer."""
    fake_openai.push(reply, reply)
    client = _client(fake_openai)
    sdk, streams = client._endpoint()
    with pytest.raises(openai.APIStatusError) as by_sdk:
        await _post(sdk, BODY)
    with pytest.raises(openai.APIStatusError) as ours:
        await streams.post(BODY)
    await client.close()
    a, b = by_sdk.value, ours.value
    assert (type(b), b.message, b.body, b.code, b.status_code) == (type(a), a.message, a.body, a.code, a.status_code)
    assert b.response.headers.get("retry-after") == a.response.headers.get("retry-after")


async def test_streamed_turns_translate_to_our_errors(fake_openai: FakeOpenAI) -> None:
    """Through `complete(on_text=...)`: rate limit (with its wait), overflow, auth, unavailable, refused."""
    fake_openai.push(*REPLIES[:4], REPLIES[7], REPLIES[8])
    client = _client(fake_openai)

    async def sink(_text: str) -> None:
        return None

    raised: list[ModelError] = []
    for _ in range(6):
        with pytest.raises(ModelError) as caught:
            await client.complete([user("hi")], on_text=sink)
        raised.append(caught.value)
    await client.close()
    assert [type(e) for e in raised] == [RateLimited, ContextOverflow, ContextOverflow, ModelAuthError, ModelUnavailable,
                                         ModelError]
    assert raised[0].retry_after == 3.0  # type: ignore[attr-defined]


async def test_stream_request_carries_the_sdk_headers(fake_openai: FakeOpenAI) -> None:
    """Bearer key, JSON content type and the SDK's own identification headers, as its create sends them."""
    client = _client(fake_openai)

    async def sink(_text: str) -> None:
        return None

    await client.complete([user("hi")], on_text=sink)
    await client.complete([user("hi")])
    await client.close()
    streamed, plain = ({k.lower(): v for k, v in h.items()} for h in fake_openai.request_headers)
    assert (streamed["authorization"], streamed["content-type"]) == ("Bearer sk-test", "application/json")
    assert streamed["user-agent"] == plain["user-agent"] and streamed["x-stainless-lang"] == plain["x-stainless-lang"]


async def test_slow_and_unreachable_endpoints(fake_openai: FakeOpenAI) -> None:
    """A timeout is ModelUnavailable marked timeout; a refused connection is marked connection."""
    fake_openai.push(Reply(content="late", delay_seconds=0.6))
    slow = _client(fake_openai, timeout_seconds=0.2)

    async def sink(_text: str) -> None:
        return None

    with pytest.raises(ModelUnavailable) as timed_out:
        await slow.complete([user("hi")], on_text=sink)
    await slow.close()
    with socket.socket() as probe:  # bound, never listening, kept while used: refused, and no one else can take it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        refused = OpenAIModelClient(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")
        with pytest.raises(ModelUnavailable) as unreachable:
            await refused.complete([user("hi")], on_text=sink)
        await refused.close()
    assert timed_out.value.timeout is True
    assert unreachable.value.connection is True
