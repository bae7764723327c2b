"""`OpenAIModelClient` on the SDK's raw request path, against the fake OpenAI server over a real socket."""
from __future__ import annotations

import json

import openai
import pytest

from agent._request_body import RequestBodies, dumps
from agent.messages import ImagePart, Message, TextPart, ToolCall, ToolSchema, assistant, messages_to_wire, system, tool_result, user
from agent.model_client import OpenAIModelClient, _post, translate_error
from chorus_errors import ContextOverflow, ModelAuthError, ModelUnavailable, RateLimited
from tests.fakes.openai_server import FakeOpenAI, Reply

TOOLS = (ToolSchema(name="lookup", description="Look a word up", parameters={"type": "object", "properties": {"q": {"type": "string"}}}),)
HISTORY = (
    system("You are terse."),
    user("hello", name="ann"),
    assistant(None, tool_calls=[ToolCall(id="call_1", name="lookup", arguments='{"q": "x"}')]),
    tool_result("call_1", "x means ten", name="lookup"),
    Message(role="user", content=(TextPart("what is this?"), ImagePart("data:image/png;base64,AAAA", detail="low"))),
    assistant("It is ten — ünïcode ✓"),
    user("thanks"),
)


def _client(fake: FakeOpenAI, **kwargs: float) -> OpenAIModelClient:
    return OpenAIModelClient(model="fake-model", base_url=fake.base_url, api_key="sk-test", **kwargs)


async def test_request_body_is_the_wire_form_of_messages_and_tools(fake_openai: FakeOpenAI) -> None:
    """The server receives exactly the OpenAI wire form of the history, the tools, max_tokens and the stream flags."""
    client = _client(fake_openai)

    async def sink(_text: str) -> None:
        return None

    await client.complete(HISTORY, tools=TOOLS, max_tokens=77, on_text=sink)
    await client.complete(HISTORY, tools=TOOLS)
    await client.close()
    streamed, plain = fake_openai.requests
    expected = {"model": "fake-model", "messages": messages_to_wire(HISTORY), "tools": [TOOLS[0].to_wire()]}
    assert streamed == {**expected, "max_tokens": 77, "stream": True, "stream_options": {"include_usage": True}}
    assert plain == expected


async def test_request_carries_bearer_auth_and_json_type(fake_openai: FakeOpenAI) -> None:
    """The key goes as a bearer token and the body is labelled JSON, as the SDK's create sends it."""
    client = _client(fake_openai)
    await client.complete([user("hi")])
    await client.close()
    headers = {k.lower(): v for k, v in fake_openai.request_headers[0].items()}
    assert (headers["authorization"], headers["content-type"]) == ("Bearer sk-test", "application/json")


async def test_plain_and_streamed_tool_calls_are_parsed(fake_openai: FakeOpenAI) -> None:
    """Tool calls, usage and finish reason come back alike with and without streaming."""
    call = {"id": "call_9", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "y"}'}}
    fake_openai.push(Reply(content=None, tool_calls=[call], prompt_tokens=12), Reply(content=None, tool_calls=[call], prompt_tokens=12))
    client = _client(fake_openai)

    async def sink(_text: str) -> None:
        return None

    plain = await client.complete([user("hi")])
    streamed = await client.complete([user("hi")], on_text=sink)
    await client.close()
    expected = (ToolCall(id="call_9", name="lookup", arguments='{"q": "y"}'),)
    assert (plain.message.tool_calls, plain.prompt_tokens, plain.finish_reason) == (expected, 12, "tool_calls")
    assert (streamed.message.tool_calls, streamed.prompt_tokens, streamed.finish_reason) == (expected, 12, "tool_calls")
    assert (plain.model, streamed.model, plain.completion_tokens) == ("fake-model", "fake-model", 5)


async def test_sdk_errors_keep_their_types_status_and_headers(fake_openai: FakeOpenAI) -> None:
    """A 429 still surfaces as the SDK's RateLimitError (status, Retry-After header) and translates to RateLimited."""
    fake_openai.push(Reply(status=429, headers={"retry-after": "3"}))
    client = _client(fake_openai)
    sdk = client._sdk()
    with pytest.raises(openai.RateLimitError) as caught:
        await _post(sdk, b'{"model":"fake-model","messages":[]}')
    await client.close()
    translated = translate_error(caught.value, "fake-model")
    assert (caught.value.status_code, caught.value.response.headers["retry-after"]) == (429, "3")
    assert (type(translated), translated.retry_after) == (RateLimited, 3.0)  # type: ignore[attr-defined]


async def test_errors_translate_through_complete(fake_openai: FakeOpenAI) -> None:
    """Overflow, auth and server errors reach the caller as our typed errors."""
    fake_openai.push(Reply(status=400, error_code="context_length_exceeded"), Reply(status=401), Reply(status=503))
    client = _client(fake_openai)
    raised = []
    for _ in range(3):
        with pytest.raises((ContextOverflow, ModelAuthError, ModelUnavailable)) as caught:
            await client.complete([user("hi")])
        raised.append(type(caught.value))
    await client.close()
    assert raised == [ContextOverflow, ModelAuthError, ModelUnavailable]


async def test_timeout_is_the_sdk_timeout(fake_openai: FakeOpenAI) -> None:
    """A slow model times out as a ModelUnavailable marked timeout."""
    fake_openai.push(Reply(content="late", delay_seconds=0.6))
    client = _client(fake_openai, timeout_seconds=0.2)
    with pytest.raises(ModelUnavailable) as caught:
        await client.complete([user("hi")])
    await client.close()
    assert caught.value.timeout is True


def test_body_matches_a_whole_serialisation() -> None:
    """The assembled body parses to the same object as serialising the request in one go."""
    body = RequestBodies().build(model="m", messages=HISTORY, tools=TOOLS, max_tokens=5, stream=True)
    expected = {"model": "m", "max_tokens": 5, "stream": True, "stream_options": {"include_usage": True},
                "messages": messages_to_wire(HISTORY), "tools": [TOOLS[0].to_wire()]}
    assert json.loads(body) == expected


def test_unchanged_messages_are_serialised_once() -> None:
    """A message seen before reuses its bytes (the same object), a new one is serialised."""
    bodies = RequestBodies()
    first = bodies.message(HISTORY[1])
    again = bodies.message(user("hello", name="ann"))  # equal value, another object
    assert (again is first, bodies.message(user("other")) is first) == (True, False)


def test_cache_keeps_within_its_byte_budget() -> None:
    """Past the budget the oldest entries go (and are serialised anew when seen again); bodies stay correct."""
    bodies = RequestBodies(budget_bytes=200)
    messages = [user(f"message number {n} " + "x" * 40) for n in range(20)]
    oldest = bodies.message(messages[0])
    body = bodies.build(model="m", messages=messages)
    assert json.loads(body)["messages"] == messages_to_wire(messages)
    assert (bodies.cached_bytes <= 200, bodies.message(messages[-1]) is bodies.message(messages[-1])) == (True, True)
    assert (bodies.message(messages[0]) is oldest, bodies.message(messages[0]) == oldest) == (False, True)


def test_lone_surrogate_is_escaped_not_an_error() -> None:
    """Text with a lone surrogate (broken platform input) still encodes, as the JSON escape."""
    assert json.loads(dumps({"t": "a\udc80b"})) == {"t": "a\udc80b"}


def test_histories_built_on_earlier_ones_match_a_fresh_build() -> None:
    """Chats that grow turn by turn, tool rounds, a resent history, an edited head and a cut tail: every body built
    on the kept histories equals the one a fresh builder makes."""
    import random

    rng = random.Random(7)
    bodies = RequestBodies()
    chats: list[list[Message]] = [[system("You are terse.")] for _ in range(5)]
    for step in range(400):
        chat = chats[rng.randrange(len(chats))]
        action = rng.random()
        if action < 0.5:
            chat += [assistant(f"reply {step}"), user(f"message {step} ✓")]
        elif action < 0.65:
            call = ToolCall(id=f"call_{step}", name="lookup", arguments='{"q": "x"}')
            chat += [assistant(None, tool_calls=[call]), tool_result(call.id, f"result {step}", name="lookup")]
        elif action < 0.75:
            chat[0] = system(f"You are terse. Notes {step}")  # the head changed: no kept history covers it
        elif action < 0.85 and len(chat) > 3:
            del chat[1:3]  # compressed: the start moved
        elif action < 0.9:
            chat[-1] = user(f"edited {step}")
        body = bodies.build(model="m", messages=chat, tools=TOOLS, stream=True)
        assert body == RequestBodies().build(model="m", messages=chat, tools=TOOLS, stream=True), step
        assert json.loads(body)["messages"] == messages_to_wire(chat)

