"""Plain statements of an exact value, and the cheap scans that rule out clauses before any pattern runs.

Owns what an "exact token" looks like (a code, number, version, id, a
hyphenated or dotted name, a quoted value: what people paste and must get back
character for character), the assignment forms that state one in ordinary
sentences in the ledger's languages ("the value of X is Y", "X is Y",
"X = Y", "X: Y", "set X to Y", "we agreed on Y for X"; German, French,
Spanish, Russian and Chinese equivalents), the bare answer to a question
("4471" after "what's the door code?"), and the message- and clause-level
prefilters of `agent.context._facts`. Pure functions, no I/O; never raises.
"""
from __future__ import annotations

import re

_I = re.IGNORECASE

# One exact value: quoted text, a token holding a digit, a hyphenated/underscored/dotted name, an all-caps code.
_ASCII_TOKEN = r"[A-Za-z0-9_.+/:@#-]"
EXACT_TOKEN = re.compile(
    r"[`\"«“][^`\"»”\n]{1,80}[`\"»”]"
    rf"|(?<![A-Za-z0-9_.-])(?={_ASCII_TOKEN}*\d){_ASCII_TOKEN}*[A-Za-z0-9]"
    r"|(?<![A-Za-z0-9_-])[A-Za-z]+(?:[-_.][A-Za-z0-9]+)+"
)
# Shapes of an exact token that name a standard, not a value somebody chose.
COMMON_TOKENS = frozenset(
    "utf-8 utf-16 utf-32 iso-8859-1 sha-1 sha-256 x86 x86_64 x86-64 amd64 i386 arm64 64-bit 32-bit e-mail "
    "e.g i.e etc. a.m p.m".split()
)
_TRAILING = ".,;:!?)]}»”\"'。，！？；"

# Assignment forms: (?P<key>) is what the value is about, (?P<value>) must be an exact token.
_K = r"(?P<key>[^\W\d][\w.'-]*(?:[ \t][^\W\d][\w.'-]*){0,3})"
_V = r"(?P<value>[`\"«“][^`\"»”\n]{1,80}[`\"»”]|\S+)"
ASSIGNMENTS: tuple[re.Pattern[str], ...] = (
    # "the value of X is Y", in each language: the thing named is the key, not "value".
    re.compile(rf"\bvalue (?:of|for) (?:the |our |my )?{_K}\s+(?:is(?: now)?|=|:|will be|should be)\s+{_V}", _I),
    re.compile(rf"\bwert (?:von|für|des|der) (?:dem |den |die |das )?{_K}\s+(?:ist|=|:|lautet)\s+{_V}", _I),
    re.compile(rf"\bvaleur (?:de|du|des|pour) (?:la |le |les |l')?{_K}\s+(?:est|=|:|sera)\s+{_V}", _I),
    re.compile(rf"\bvalor (?:de|del|para) (?:la |el |los |las )?{_K}\s+(?:es|=|:|será)\s+{_V}", _I),
    re.compile(rf"\bзначение {_K}\s*(?:—|–|-|=|:|равно|это|будет)\s*{_V}", _I),
    re.compile(r"(?P<key>[\u4e00-\u9fff\w]{1,12})的值(?:是|为|為|:|：)\s*(?P<value>\S+)"),
    # "we agreed on Y for X", "settled on Y for X", and equivalents.
    re.compile(rf"\b(?:agreed|settled|decided)\s+(?:up)?on\s+{_V}\s+(?:for|as) (?:the |our )?{_K}", _I),
    re.compile(rf"\bauf\s+{_V}\s+für (?:den |die |das )?{_K}\s+(?:geeinigt|verständigt|festgelegt)", _I),
    re.compile(rf"\b(?:accord|convenu|décidé)\s+(?:sur|de)\s+{_V}\s+pour (?:la |le |les |l')?{_K}", _I),
    re.compile(rf"\b(?:acordamos|acordado|decidimos|quedamos en)\s+{_V}\s+para (?:la |el |los |las )?{_K}", _I),
    re.compile(rf"\bдоговорились(?: о| об| на)?\s+{_V}\s+для {_K}", _I),
    re.compile(r"(?:商定|约定|同意|决定)(?P<key>[\u4e00-\u9fff\w]{1,12})(?:用|为|是)\s*(?P<value>\S+)"),
    # "X is now Y", "X will be Y" after a determiner or at the clause start.
    re.compile(
        rf"(?:^|\b(?:the|our|my|new|die|der|das|le|la|les|el|los|las)\s+){_K}\s+(?:is now|is|are|will be|"
        rf"should be|changed to|ist jetzt|ist|est maintenant|est|es ahora|es|теперь|будет|—)\s+{_V}",
        _I,
    ),
    re.compile(rf"(?:^|[\s(,;])(?:the |our )?{_K}\s*(?:=|:=|:|：|->|→)\s*{_V}"),
    re.compile(r"(?:把|将)(?P<key>[\u4e00-\u9fff\w]{1,12})(?:设为|设置为|改为|改成)\s*(?P<value>\S+)"),
)

# A bare answer: a few words at most, holding an exact token (see `bare_answer`).
MAX_ANSWER_WORDS = 3

# Message-level prefilter: a message with none of these can hold no fact (no digit, path, id, code, quote,
# rule word or CJK text). Run over the lower-cased text: most of a group chat stops here.
_SHAPES = r"[0-9/\\@_`=#$€£¥\"«“\u3040-\u30ff\u4e00-\u9fff]|[a-z][-.][a-z]"


def rule_words(patterns: tuple[re.Pattern[str], ...]) -> str:
    """The alternation of `patterns`, for a lower-case prefilter."""
    return "|".join(f"(?:{pattern.pattern})" for pattern in patterns)


def prefilter(rules: str) -> re.Pattern[str]:
    """The message-level gate: a shape of an exact value, or a rule/decision/name word (over lower-case text)."""
    return re.compile(f"{_SHAPES}|{rules}")


# Original-case shapes the lower-case gate cannot see: CamelCase and all-caps codes.
CASED_SHAPES = re.compile(r"[a-z][A-Z]|[A-Z]{2}")


def exact_value(text: str) -> str | None:
    """`text` as an exact token if it is one (trailing punctuation aside), else None."""
    value = text.strip()
    for candidate in (value, value.rstrip(".,;:!?)]}。，！？；"), value.rstrip(_TRAILING)):
        match = EXACT_TOKEN.fullmatch(candidate) if candidate else None
        if match is not None:
            return None if match.group(0).casefold() in COMMON_TOKENS else match.group(0)
    return None


def closes_statement(rest: str) -> bool:
    """What follows a stated value ends the statement: nothing, punctuation, or one word ("... 4471 please").

    "the LUN is stuck writing LBA=2940h" states a value; "w32codecs: win32 binary codecs" describes one.
    """
    stripped = rest.strip()
    return not stripped or stripped[0] in ",;.!)(—–-:。，；！" or len(stripped.split()) <= 1


def assignment(clause: str) -> tuple[str, str] | None:
    """(key, exact value) of a plain statement of a value ("the door code is 4471"), or None."""
    for pattern in ASSIGNMENTS:
        for match in pattern.finditer(clause):
            value = exact_value(match.group("value"))
            after = match.start("value") + len(value) if value and match.end("value") == match.end() else match.end()
            if value is not None and closes_statement(clause[after:]):
                return match.group("key"), value
    return None


def bare_answer(text: str) -> str | None:
    """The exact token of a short reply that is just a value ("4471", "it's QX-77-B"), or None."""
    body = text.strip()
    if not body or "\n" in body or body.endswith("?") or len(body.split()) > MAX_ANSWER_WORDS:
        return None
    tokens = [exact_value(word) for word in body.split()]
    found = [token for token in tokens if token is not None]
    return found[-1] if found else None


def is_question(text: str) -> bool:
    """A line that asks something (its last non-empty line ends with a question mark)."""
    stripped = text.rstrip()
    return stripped.endswith(("?", "？"))
