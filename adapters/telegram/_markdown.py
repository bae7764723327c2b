"""The model's everyday Markdown turned into Telegram MarkdownV2, escaped so Telegram accepts it.

Owns `to_markdown_v2`. Understands fenced code blocks (CommonMark's rules,
`adapters/fences.py`: a longer fence holds a shorter one verbatim), inline code, **bold** /
__bold__, *italic* / _italic_, ~~strike~~, [links](https://...), `#` headings
(rendered bold) and `-`/`*`/`+` bullets (rendered "•"). Everything else is
escaped and shown as typed. The output is always valid MarkdownV2 (an
unclosed marker is escaped, not guessed at), and its visible text is never
longer than the input, so a chunk that fits Telegram's limit before
conversion still fits after it. Knows nothing of sending.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from adapters.fences import blocks

_TEXT_SPECIALS = re.compile(r"([_*\[\]()~`>#+\-=|{}.!\\])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")  # "## C# tips ##" -> "C# tips"
_BULLET = re.compile(r"^(\s*)[-*+]\s+")
_URL = re.compile(r"^(?:https?://|tg://|mailto:)[^\s]+$")
_MARKUP_START = re.compile(r"[\\`\[*_~]")  # characters that may begin markup in _parse
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# Delimiters in the order they are tried: doubles before singles.
_DELIMITERS = (("**", "bold"), ("__", "bold"), ("~~", "strike"), ("*", "italic"), ("_", "italic"))
_MARKERS = {"bold": "*", "italic": "_", "strike": "~"}
LINK_PREFIX = "link:"


def escape_text(text: str) -> str:
    """Escape every character MarkdownV2 reserves outside entities."""
    return _TEXT_SPECIALS.sub(r"\\\1", text)


def escape_code(text: str) -> str:
    """Escape the two characters MarkdownV2 reserves inside code and pre entities."""
    return text.replace("\\", "\\\\").replace("`", "\\`")


def escape_url(url: str) -> str:
    """Escape the two characters MarkdownV2 reserves inside a link's (...) part."""
    return url.replace("\\", "\\\\").replace(")", "\\)")


@dataclass(frozen=True, slots=True)
class _Run:
    """A stretch of text with the styles (outer first) that apply to it; links are `link:<url>` styles."""

    text: str
    styles: tuple[str, ...]
    code: bool = False


def _code_span(text: str, start: int) -> tuple[str, int] | None:
    """The inline code starting at `start` (a backtick run) and the index after it, or None."""
    width = len(text[start:]) - len(text[start:].lstrip("`"))
    fence = "`" * width
    index = start + width
    while True:
        end = text.find(fence, index)
        if end == -1:
            return None
        after = end + width
        if after < len(text) and text[after] == "`":
            index = after + len(text[after:]) - len(text[after:].lstrip("`"))
            continue
        body = text[start + width:end]
        if len(body) >= 2 and body[0] == body[-1] == " " and body.strip():
            body = body[1:-1]
        return body, after


def _link(text: str, start: int) -> tuple[str, str, int] | None:
    """`[label](url)` at `start`: the label, the url and the index after it, or None."""
    depth, index = 0, start
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0:
            break
        index += 1
    if depth != 0 or index == start + 1 or not text.startswith("(", index + 1):
        return None
    close = _matching_paren(text, index + 1)
    url = text[index + 2:close].strip() if close is not None else ""
    if close is None or not _URL.match(url):
        return None
    return text[start + 1:index], url, close + 1


def _matching_paren(text: str, start: int) -> int | None:
    """The `)` closing the `(` at `start`, allowing balanced parentheses inside URLs."""
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return None


def _closing(text: str, start: int, delimiter: str) -> int | None:
    """Where the emphasis opened by `delimiter` at `start` closes, or None if it does not."""
    width = len(delimiter)
    first = start + width
    if first >= len(text) or text[first].isspace():
        return None
    if delimiter[0] == "_" and start > 0 and text[start - 1].isalnum():
        return None  # snake_case words are not emphasis
    index = first + 1 if width == 1 else first
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
        elif char == "`" and (span := _code_span(text, index)) is not None:
            index = span[1]
        elif width == 1 and text.startswith(delimiter * 2, index):
            index += 2  # a nested double delimiter, not our closer
        elif text.startswith(delimiter, index) and index > first and not text[index - 1].isspace():
            after = index + width
            if delimiter[0] == "_" and after < len(text) and text[after].isalnum():
                index += 1
                continue
            return index
        else:
            index += 1
    return None


def _parse(text: str, styles: tuple[str, ...], out: list[_Run]) -> None:
    buffer: list[str] = []

    def flush() -> None:
        if buffer:
            out.append(_Run("".join(buffer), styles))
            buffer.clear()

    inside_link = any(style.startswith(LINK_PREFIX) for style in styles)
    index = 0
    while index < len(text):
        special = _MARKUP_START.search(text, index)
        if special is None:
            buffer.append(text[index:])
            break
        if special.start() > index:  # copy plain stretches whole: most text has no markup
            buffer.append(text[index:special.start()])
            index = special.start()
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in _ASCII_PUNCTUATION:
            buffer.append(text[index + 1])
            index += 2
            continue
        if char == "`":
            span = _code_span(text, index)
            if span is not None:
                flush()
                if span[0]:
                    out.append(_Run(span[0], styles, code=True))
                index = span[1]
                continue
        if char == "[" and not inside_link and (link := _link(text, index)) is not None:
            flush()
            _parse(link[0], (*styles, LINK_PREFIX + link[1]), out)
            index = link[2]
            continue
        for delimiter, style in _DELIMITERS:
            if text.startswith(delimiter, index) and (end := _closing(text, index, delimiter)) is not None:
                flush()
                inner = styles if style in styles else (*styles, style)
                _parse(text[index + len(delimiter):end], inner, out)
                index = end + len(delimiter)
                break
        else:
            buffer.append(char)
            index += 1
    flush()


def _open(style: str) -> str:
    return "[" if style.startswith(LINK_PREFIX) else _MARKERS[style]


def _close(style: str) -> str:
    if style.startswith(LINK_PREFIX):
        return f"]({escape_url(style[len(LINK_PREFIX):])})"
    return _MARKERS[style]


def _render(runs: list[_Run]) -> str:
    """Emit runs, keeping shared outer styles open so no empty or ambiguous markers (`__`) appear."""
    out: list[str] = []
    stack: list[str] = []
    for run in runs:
        # Code cannot sit inside any other entity: close everything around it.
        wanted = [] if run.code else list(run.styles)
        common = 0
        while common < min(len(stack), len(wanted)) and stack[common] == wanted[common]:
            common += 1
        out.extend(_close(style) for style in reversed(stack[common:]))
        out.extend(_open(style) for style in wanted[common:])
        stack = wanted
        out.append(f"`{escape_code(run.text)}`" if run.code else escape_text(run.text))
    out.extend(_close(style) for style in reversed(stack))
    return "".join(out)


def _inline(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        runs: list[_Run] = []
        _parse(heading.group(1), ("bold",), runs)
        return _render(runs)
    bullet = _BULLET.match(line)
    prefix = ""
    if bullet:
        prefix, line = bullet.group(1) + "• ", line[bullet.end():]
    runs = []
    _parse(line, (), runs)
    return escape_text(prefix) + _render(runs)


def to_markdown_v2(text: str) -> str:
    """Convert common Markdown to Telegram MarkdownV2.

    Args:
        text: the model's reply, in everyday Markdown.

    Returns:
        The same content as valid MarkdownV2: code blocks become `pre` entities
        (with their language), emphasis and links become entities, and every
        other reserved character is escaped.
    """
    out: list[str] = []
    for block in blocks(text):
        if block.fence is None:
            out.extend(_inline(line) for line in block.text.split("\n"))
        else:
            # The body verbatim, whatever it holds (a shorter fence, `# lines`): only `\` and `` ` `` are escaped.
            out.append(f"```{block.fence.language}\n{escape_code(block.text)}\n```")
    return "\n".join(out)
