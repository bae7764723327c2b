"""Encoded payloads: text hidden in Morse code or base64 is decoded so the scanner can read it.

Owns `hidden_text`: the plain text a note encodes, or None when it encodes none. A note that is
mostly Morse, or carries a long base64 run that decodes to readable text, is scanned a second
time as that text (one level: a payload inside a payload is not unwrapped). Cheap for ordinary
notes: one character-class count and one regex search, no decoding unless the shape fits.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Final

_MORSE: Final = dict(zip(
    ".- -... -.-. -.. . ..-. --. .... .. .--- -.- .-.. -- -. --- .--. --.- .-. ... - ..- ...- .-- -..- -.-- --.. "
    "----- .---- ..--- ...-- ....- ..... -.... --... ---.. ----. .-.-.- --..-- ..--.. .----. -.-.-- -..-. ---...".split(),
    "abcdefghijklmnopqrstuvwxyz0123456789.,?'!/:", strict=True))
_MORSE_CHARS: Final = frozenset(".- /|\n\t")
_BASE64_RUN: Final = re.compile(r"(?<![\w+/=])[A-Za-z0-9+/]{40,}={0,2}(?![\w+/=])")
MIN_MORSE_SYMBOLS: Final = 20


def _morse(text: str) -> str | None:
    symbols = sum(1 for char in text if char in ".-")
    if symbols < MIN_MORSE_SYMBOLS or sum(1 for char in text if char not in _MORSE_CHARS) * 10 > len(text):
        return None
    words = re.split(r" {2,}| ?[/|] ?|\n", text.strip())
    decoded = " ".join("".join(_MORSE.get(code, "") for code in word.split()) for word in words)
    return decoded if len(decoded.replace(" ", "")) * 2 >= len(text.split()) else None


def _readable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    letters = sum(1 for char in text if char.isalpha() or char == " ")
    return text if text.isprintable() and letters * 10 >= len(text) * 8 and " " in text else None


def _base64(text: str) -> str | None:
    found = []
    for run in _BASE64_RUN.findall(text):
        try:
            raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        plain = _readable(raw)
        if plain is not None:
            found.append(plain)
    return "\n".join(found) or None


def hidden_text(text: str) -> str | None:
    """The plain text a note hides in Morse code or base64, or None."""
    return _morse(text) or _base64(text)
