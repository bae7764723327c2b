"""Overflow errors as providers really word them: recognised, and the stated window read (one general rule)."""
from __future__ import annotations

import json

import pytest

from agent.provider_limits import is_overflow_text, stated_limit

LLAMA_CPP_BODY = json.dumps({
    "code": 400, "message": "the request exceeds the available context size. try increasing the context size or "
    "enable context shift", "type": "exceed_context_size_error", "n_prompt_tokens": 14429, "n_ctx": 8192,
})

CASES = [
    ("openai", "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
     "Please reduce the length of the messages.", 8192),
    ("openai-completion", "This model's maximum context length is 4097 tokens, however you requested 4231 tokens "
     "(3975 in your prompt; 256 for the completion). Please reduce your prompt; or completion length.", 4097),
    ("vllm", "This model's maximum context length is 16384 tokens. However, you requested 122946 tokens "
     "(112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.", 16384),
    ("vllm-max-tokens", "'max_tokens' is too large: 1000. This model's maximum context length is 4096 tokens and "
     "your request has 3500 input tokens (1000 > 4096 - 3500).", 4096),
    ("llama.cpp", LLAMA_CPP_BODY, 8192),
    ("llama.cpp-small", '{"n_prompt_tokens": 1407, "n_ctx": 256, "type": "exceed_context_size_error"}', 256),
    ("ollama-runner", "input exceeds context length (prompt=2782 limit=2048)", 2048),
    ("litellm", "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: "
     "OpenAIException - This model's maximum context length is 8192 tokens. However, your messages resulted in "
     "9000 tokens.", 8192),
    ("openrouter", "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens "
     "(8000 of text input, 1000 in the output). Please reduce the length of either one, or use the \"middle-out\" "
     "transform to compress your prompt automatically.", 8192),
    ("anthropic", "prompt is too long: 210000 tokens > 200000 maximum", 200000),
    ("mistral", "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context "
     "length", 32768),
    ("tgi", "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8193. Given: 9000 `inputs` tokens "
     "and 0 `max_new_tokens`", 8193),
    ("sdk-prefix", "Error code: 400 - This model's maximum context length is 8192 tokens. However, your messages "
     "resulted in 9000 tokens.", 8192),
    ("thousands", "This model's maximum context length is 131,072 tokens. However, you requested 140,000 tokens.",
     131072),
]


@pytest.mark.parametrize(("provider", "text", "limit"), CASES, ids=[case[0] for case in CASES])
def test_stated_window_is_read_from_real_wordings(provider: str, text: str, limit: int) -> None:
    """The window each provider states is found, never the request's own size."""
    assert is_overflow_text(text)
    assert stated_limit(text) == limit


@pytest.mark.parametrize("text", [
    "the request exceeds the available context size, try increasing it",  # llama.cpp without the body fields
    "prompt too long; exceeded max context length by 4 tokens",  # Ollama: no window stated
])
def test_overflow_without_a_stated_window(text: str) -> None:
    """Overflow recognised, no window claimed (the caller shrinks its assumption step by step)."""
    assert is_overflow_text(text)
    assert stated_limit(text) is None


@pytest.mark.parametrize("text", [
    "Invalid 'messages[2].content': string too short.", "Rate limit reached for gpt-4o in organization org-x on "
    "tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.", "Incorrect API key provided: sk-****",
])
def test_other_errors_are_not_overflows(text: str) -> None:
    """A refused request or a rate limit is not read as a context overflow."""
    assert not is_overflow_text(text)
