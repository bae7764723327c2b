"""Fenced code blocks as CommonMark defines them, for every platform's converter and the splitter.

Owns `Fence` (an opening fence line: ``` or ~~~ of any length from three,
indented at most three spaces, with an info string), `closes` (whether a line
ends a block: the same character, at least as long, nothing after it) and
`blocks` (a text cut into prose and code blocks, each code body exactly the
lines between its fences). A longer fence may hold a shorter one: four
backticks around a three-backtick example are one block whose body holds the
inner fence lines verbatim. An unclosed block runs to the end of the text.
Pure; knows no platform.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_OPENING = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_LANGUAGE = re.compile(r"^[\w+#.-]+$")
ZERO_WIDTH_SPACE = "\u200b"


@dataclass(frozen=True, slots=True)
class Fence:
    char: str  # "`" or "~"
    length: int
    info: str  # the info string, stripped ("python", "json title=x", "")
    line: str  # the opening line as written (reopened as is when a block is split across messages)

    @property
    def language(self) -> str:
        """The info string's first word when it looks like a language name, else ""."""
        word = self.info.split(maxsplit=1)[0] if self.info else ""
        return word if _LANGUAGE.match(word) else ""

    @property
    def closing(self) -> str:
        return self.char * self.length


def opening(line: str) -> Fence | None:
    """The fence `line` opens, or None."""
    match = _OPENING.match(line)
    if match is None:
        return None
    run, info = match.group(2), match.group(3)
    if run[0] == "`" and "`" in info:
        return None  # "```a`b" is inline code, not a fence
    return Fence(run[0], len(run), info.strip(), line)


def closes(fence: Fence, line: str) -> bool:
    """Whether `line` closes `fence`: at most three spaces, the same character at least as often, then blanks."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return False
    run = len(stripped) - len(stripped.lstrip(fence.char))
    return run >= fence.length and not stripped[run:].strip()


@dataclass(frozen=True, slots=True)
class Block:
    """Prose (`fence` None: its lines joined) or a code block (its body: the lines between the fences)."""

    text: str
    fence: Fence | None = None
    closed: bool = True


def blocks(text: str) -> list[Block]:
    """`text` as prose and code blocks, in order; joining them with newlines (and fences) gives it back."""
    lines = text.split("\n")
    out: list[Block] = []
    prose: list[str] = []
    index = 0
    while index < len(lines):
        fence = opening(lines[index])
        if fence is None:
            prose.append(lines[index])
            index += 1
            continue
        if prose:
            out.append(Block("\n".join(prose)))
            prose = []
        end = index + 1
        while end < len(lines) and not closes(fence, lines[end]):
            end += 1
        out.append(Block("\n".join(lines[index + 1:end]), fence, closed=end < len(lines)))
        index = end + 1
    if prose or not out:
        out.append(Block("\n".join(prose)))
    return out


def break_backtick_runs(code: str) -> str:
    """`code` with a zero-width space between adjacent backticks: shown the same, never read as a fence."""
    return re.sub(r"`(?=`)", "`" + ZERO_WIDTH_SPACE, code)


__all__ = ["ZERO_WIDTH_SPACE", "Block", "Fence", "blocks", "break_backtick_runs", "closes", "opening"]
