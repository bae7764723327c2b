"""Reading a provider's overflow error: is it one, and which window does it state?

Owns `is_overflow_text` and `stated_limit`. Providers word a context overflow
in many ways (OpenAI, vLLM, llama.cpp's server, Ollama, LiteLLM, OpenRouter,
Anthropic-compatible gateways, TGI, Mistral); rather than one pattern per
provider, every number in the text is judged by the nearest cue word around
it: "maximum", "limit", "context length", "n_ctx", "<=" mark the window;
"requested", "resulted in", "your", "given", "in the messages" mark the
request's own size. Used only where SDK errors are translated (the one place
error text is read). Pure functions; knows nothing of HTTP clients.
"""
from __future__ import annotations

import re

# Below this a number is a count of something else (a status code, a delta).
MIN_STATED_WINDOW = 128
LEFT_REACH = 60
RIGHT_REACH = 40

_OVERFLOW_CUES = (
    "context length", "context size", "context window", "context_length", "maximum context", "n_ctx",
    "prompt is too long", "prompt too long", "input is too long", "too many tokens", "maximum model length",
    "exceed_context_size", "exceeds the available context", "context_window_exceeded", "reduce the length",
    "model_max_length", "max_model_len", "tokens > ", "tokens + `max_new_tokens` must be <=",
)
# Cue words before a number: (text, +1 = the window, -1 = the request's size).
_LEFT_CUES: tuple[tuple[str, int], ...] = (
    ("maximum", 1), ("max context", 1), ("limit", 1), ("context length", 1), ("context size", 1),
    ("context window", 1), ("n_ctx", 1), ("num_ctx", 1), ("model length", 1), ("max_model_len", 1),
    ("<=", 1), ("at most", 1), ("up to", 1), ("capacity", 1),
    ("requested", -1), ("resulted", -1), ("your", -1), ("you ", -1), ("given", -1), ("contains", -1),
    ("n_prompt", -1), ("prompt=", -1), ("prompt (", -1), ("input tokens", -1), ("has ", -1), ("got", -1),
    ("by ", -1), ("max_tokens", -1), ("max_new_tokens", -1), ("too large", -1), ("too long", -1),
)
# Cue words after a number ("200000 maximum", "112946 in the messages").
_RIGHT_CUES: tuple[tuple[str, int], ...] = (
    ("maximum", 1), ("max", 1), ("limit", 1),
    ("in the messages", -1), ("in the completion", -1), ("in the output", -1), ("in your prompt", -1),
    ("in the prompt", -1), ("of text input", -1), ("input", -1), ("for the completion", -1), ("draft", -1),
)
_UNIT = re.compile(r"^\s*(?:tokens?\b)?\s*")
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\s?[kK]\b)?")


def is_overflow_text(text: str) -> bool:
    """Does an error text say the request was larger than the model's context?"""
    lowered = text.lower()
    return any(cue in lowered for cue in _OVERFLOW_CUES)


def _nearest(left: str, right: str) -> int:
    """+1 / -1 from the cue closest to the number (0: no cue in reach)."""
    best: tuple[int, int] | None = None  # (distance, sign)
    for cue, sign in _LEFT_CUES:
        position = left.rfind(cue)
        if position >= 0:
            distance = len(left) - (position + len(cue))
            if best is None or distance < best[0] or (distance == best[0] and sign < 0):
                best = (distance, sign)
    # After the number a cue counts only right beside it ("200000 maximum", "112946 in the messages").
    beside = _UNIT.sub("", right, count=1)
    gap = len(right) - len(beside)
    for cue, sign in _RIGHT_CUES:
        if beside.startswith(cue) and (best is None or gap < best[0]):
            return sign
    return best[1] if best is not None else 0


def _value(digits: str, suffix: str | None) -> int:
    number = int(digits.replace(",", ""))
    return number * 1000 if suffix else number


def stated_limit(text: str) -> int | None:
    """The context window an overflow error states, in tokens; None when it names none.

    The first number whose nearest cue marks a window wins (texts state the
    window before or beside the request's size; the request's own figures are
    skipped).
    """
    lowered = text.lower()
    for match in _NUMBER.finditer(lowered):
        value = _value(match.group(1), match.group(2))
        if value < MIN_STATED_WINDOW:
            continue
        left = lowered[max(0, match.start() - LEFT_REACH):match.start()]
        right = lowered[match.end():match.end() + RIGHT_REACH]
        if _nearest(left, right) > 0:
            return value
    return None


__all__ = ["is_overflow_text", "stated_limit"]
