"""Text views for the memory scanner: NFKC, invisible characters, homoglyphs, spacing and leetspeak tricks.

Owns turning one note into the few normalised *views* the patterns run on. It
knows no patterns and no categories; `scanner.py` decides what a view means.

Why several views rather than one: folding every Cyrillic letter to Latin helps
catch `ignоre` (with a Cyrillic `о`) but destroys Russian text, and mapping
`0`→`o` helps catch `ign0re` but destroys `$API_KEY`. Each pattern therefore
looks at the view that keeps what it needs.
"""
from __future__ import annotations

import re
import unicodedata
from functools import cached_property

# Characters refused outright (docs/design.md §4.1), plus the Unicode "tag" block, which
# smuggles invisible ASCII through copy-paste just like zero-width characters.
ZERO_WIDTH = frozenset({0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF})
INVISIBLE_OPERATORS = frozenset({0x2062, 0x2063, 0x2064})
BIDI_CONTROLS = frozenset({0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069})
TAG_RANGE = range(0xE0000, 0xE0080)

# Lowercase Cyrillic / Greek / IPA letters that render like Latin ones. Applied
# after casefolding, so uppercase lookalikes (А, В, Е, К, М, Н, О, Р, С, Т, Х) are covered too.
_CONFUSABLES = {
    # Cyrillic
    "а": "a", "в": "b", "ԁ": "d", "е": "e", "ё": "e", "һ": "h", "н": "h", "і": "i", "ї": "i",
    "ј": "j", "к": "k", "ӏ": "l", "м": "m", "п": "n", "о": "o", "р": "p", "ԛ": "q", "г": "r",
    "ѕ": "s", "т": "t", "с": "c", "у": "y", "ү": "y", "ԝ": "w", "х": "x", "ѡ": "w", "ь": "b",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "ω": "w", "γ": "y", "ϲ": "c", "ѵ": "v", "μ": "u", "σ": "o",
    # Latin look-alikes outside ASCII that NFKC leaves alone
    "ı": "i", "ɩ": "i", "ɑ": "a", "ɡ": "g", "ʀ": "r", "ʏ": "y", "ɴ": "n", "ᴏ": "o", "ꞵ": "b",
}
_CONFUSABLE_TABLE = str.maketrans(_CONFUSABLES)

# Digits and symbols used as letters. Only applied inside tokens that also hold a
# letter (`ign0re`, `pr3vious`), so plain numbers and prices keep their meaning.
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "9": "g",
                       "@": "a", "$": "s", "!": "i", "|": "l"})
# Only tokens holding a leet character reach the Python callback. Matches start at token starts only (the
# lookbehind), and each start scans its token once: linear, not the quadratic "find the digit" regex.
_LEET_TOKEN = re.compile(r"(?<![\w@$!|])[\w@$!|]*?[0134579@$!|][\w@$!|]*")
_HAS_LETTER = re.compile(r"[^\W\d_]")
# Runs of single characters separated by one separator: `i g n o r e`, `i.g.n.o.r.e`, `i-g-n-o-r-e`.
_SPACED_RUN = re.compile(r"(?<![^\W_])(?:[^\W_][ .\-_*·•,+~/]){2,}[^\W_](?![^\W_])")
_SPACED_SEPARATORS = re.compile(r"[ .\-_*·•,+~/]")
_WHITESPACE = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")


class Views:
    """One note seen five ways; every view has invisible format characters removed.

    `deobfuscated` and `squashed` are built on first use: a long prompt that the note-shape layer
    refuses on `lines` never pays for them.

    Attributes:
        raw: NFKC text with case kept (secret shapes such as `AKIA…` are case-sensitive).
        native: `raw` casefolded with whitespace collapsed (patterns in any language).
        latin: `native` with Cyrillic/Greek homoglyphs folded to Latin (English patterns).
        deobfuscated: `latin` with spaced-out letters joined and leetspeak undone.
        squashed: `deobfuscated` with every non-alphanumeric character removed.
        lines: `latin` before whitespace is collapsed: line structure kept (note-shape signals).
    """

    def __init__(self, raw: str, native: str, latin: str, lines: str) -> None:
        self.raw = raw
        self.native = native
        self.latin = latin
        self.lines = lines

    @cached_property
    def deobfuscated(self) -> str:
        return _WHITESPACE.sub(" ", _undo_leet(_join_spaced(self.latin)))

    @cached_property
    def squashed(self) -> str:
        return _NOT_ALNUM.sub("", self.deobfuscated)


def _class(points: frozenset[int] | range) -> str:
    return "".join(f"\\U{point:08x}" for point in sorted(points))


# One regex pass in C instead of a Python loop per character (a 2,200-char note costs ~50 µs, not 2 ms).
_INVISIBLE = re.compile(
    f"(?P<zero_width_character>[{_class(ZERO_WIDTH)}])|(?P<bidi_control_character>[{_class(BIDI_CONTROLS)}])"
    f"|(?P<invisible_operator_character>[{_class(INVISIBLE_OPERATORS)}])"
    f"|(?P<unicode_tag_character>[\\U{TAG_RANGE.start:08x}-\\U{TAG_RANGE.stop - 1:08x}])")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def invisible_kind(text: str) -> str | None:
    """Name the first refused invisible character class in `text`, or None."""
    if text.isascii():
        return None
    match = _INVISIBLE.search(text)
    return match.lastgroup if match else None


def _strip_format(text: str) -> str:
    # Cf covers every zero-width/bidi/tag character and the soft hyphen: none of
    # them may split a word the patterns look for. ASCII holds no Cf character.
    if text.isascii():
        return text
    return _NON_ASCII.sub(lambda match: "" if unicodedata.category(match.group(0)) == "Cf" else match.group(0), text)


def _join_spaced(text: str) -> str:
    return _SPACED_RUN.sub(lambda match: _SPACED_SEPARATORS.sub("", match.group(0)), text)


def _undo_leet(text: str) -> str:
    def fold(match: re.Match[str]) -> str:
        token = match.group(0)
        return token.translate(_LEET) if _HAS_LETTER.search(token) else token

    return _LEET_TOKEN.sub(fold, text)


def views(text: str) -> Views:
    """Build every view of `text` once; the scanner matches patterns against them."""
    raw = _strip_format(unicodedata.normalize("NFKC", text))
    folded = raw.casefold()
    native = _WHITESPACE.sub(" ", folded).strip()
    if folded.isascii():  # no homoglyph to fold, nothing for NFKC to change
        latin, lines = native, folded
    else:
        latin = unicodedata.normalize("NFKC", native.translate(_CONFUSABLE_TABLE))
        lines = unicodedata.normalize("NFKC", folded.translate(_CONFUSABLE_TABLE))
    return Views(raw=raw, native=native, latin=latin, lines=lines)
