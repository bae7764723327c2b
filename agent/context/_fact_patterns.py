"""The vocabulary of fact extraction: the compiled patterns and the literals that gate them.

Owns the constraint and decision patterns (English, German, French, Spanish, Chinese, Russian), the value,
path, identifier, URL and e-mail shapes, the key/value statement forms and the cheap literal gates that let
a clause skip a pattern family it cannot match. Pure data and two predicates; how a message is cut into
clauses and classified is `agent.context._facts`.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, TypeAlias

from agent.context._ascii import ascii_twin
from agent.context._literals import ascii_literals, literals

FactKind: TypeAlias = Literal[
    "assignment", "answer", "constraint", "decision", "value", "ticket", "url", "email", "name", "path", "identifier"
]

_I = re.IGNORECASE

CONSTRAINT_PATTERNS: tuple[re.Pattern[str], ...] = (
    # English: imperative don't only at a clause start or after please/you/we ("I don't know" is no rule).
    re.compile(
        r"\b(?:never|always|must(?:n'?t| not)?|should(?:n'?t| not)?|avoid|prefer(?:red|s)?|make sure|ensure|"
        r"no longer|not allowed|forbidden|prohibited|mandatory|required|only use|use only|stop using|"
        r"under no circumstances|at all times|(?:i'd|i would) rather)\b",
        _I,
    ),
    re.compile(r"(?:^|[,;:(]\s*|\b(?:please|you|we|and|but|so|just)\s+)(?:don'?t|do not|doesn'?t need)\b", _I),
    # German
    re.compile(
        r"\b(?:nie|niemals|immer|stets|muss|müssen|musst|müsst|darf|dürfen|darfst|dürft|sollst|sollt|sollte|"
        r"sollten|auf keinen fall|keinesfalls|vermeide[nt]?|bevorzuge[n]?|bitte nicht|bitte keine?[nmrs]?|"
        r"verboten|erforderlich|ausschließlich|nur noch)\b",
        _I,
    ),
    # French
    re.compile(
        r"\b(?:jamais|toujours|surtout pas|il (?:ne )?faut|doi[st]|doivent|devez|devons|interdit|obligatoire|"
        r"évite[rz]?|préf[èé]re[rz]?|uniquement)\b|\b(?:ne|n')\s?\w+\s+(?:pas|jamais)\b",
        _I,
    ),
    # Spanish
    re.compile(
        r"\b(?:nunca|siempre|jamás|debe[sn]?|debemos|hay que|tienes que|tenemos que|evita[rn]?|prefiero|"
        r"preferimos|prohibido|obligatorio|únicamente|no\s+\w+(?:es|as|éis|áis))\b",
        _I,
    ),
    # Chinese (no word boundaries; 别 only as "don't", not in 特别/区别/别人 …)
    re.compile(
        r"永远不要|不要|从不|绝不|决不|总是|始终|必须|务必|一定要|禁止|不能|不得|请勿|不许|不准|只能|只用|偏好|更喜欢|宁愿|避免"
        r"|(?<![特区类级分个告识辨性派])别(?![人的处])"
    ),
    # Russian
    re.compile(
        r"\b(?:никогда|всегда|нельзя|должен|должна|должно|должны|обязательно|запрещено|предпочитаю|"
        r"избегай(?:те)?|только|ни в коем случае|не\s+\w+(?:й|йте|ите))\b",
        _I,
    ),
)

DECISION_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"\b(?:decided|decision|we(?:'ll| will) (?:go with|use|keep|switch to)|let'?s (?:go with|stick with|"
        r"switch to)|going with|agreed|settled on|we chose|i chose|confirmed|the plan is)\b",
        _I,
    ),
    re.compile(
        r"\b(?:entschieden|entscheidung|beschlossen|wir nehmen|wir verwenden|wir bleiben bei|festgelegt|bestätigt|"
        r"vereinbart|geeinigt)\b",
        _I,
    ),
    re.compile(r"\b(?:décidé|décision|on part sur|on garde|nous utiliserons|on utilisera|convenu|confirmé)\b", _I),
    re.compile(
        r"\b(?:decidimos|decidido|decisión|vamos con|usaremos|nos quedamos con|acordamos|acordado|confirmado)\b", _I
    ),
    re.compile(r"决定|决策|就用|采用|确定|确认|定了|商定|选用"),
    re.compile(
        r"\b(?:решили|решено|решение|договорились|будем использовать|выбрали|подтверждаю|подтверждено|утверждено)\b",
        _I,
    ),
)
# The same over lower-cased text without IGNORECASE: about twice as fast on whole messages
# (the patterns are all lower case), used as the message-level gate.
ANY_DECISION_LOWER = re.compile("|".join(f"(?:{pattern.pattern})" for pattern in DECISION_PATTERNS))
ASCII_DECISION_LOWER = ascii_twin(ANY_DECISION_LOWER)  # over an ASCII lower-cased text
# A decision pattern cannot match without one of these (lower case): substring tests run at memory speed over
# a long assistant message, where the combined pattern tries every branch at every position.
_DECISION_NEEDLES = (
    "decid", "decision", "décision", "decisión", "we'll", "we will", "let's", "lets ", "going with", "agreed",
    "settled on", "chose", "confirmed", "the plan is", "entschieden", "entscheidung", "beschlossen", "wir nehmen", "wir verwenden",
    "wir bleiben", "festgelegt", "bestätigt", "vereinbart", "geeinigt", "décid", "on part sur", "on garde",
    "nous utiliserons", "on utilisera", "convenu", "confirmé", "vamos con", "usaremos", "nos quedamos", "acord",
    "confirmado", "决定", "决策", "就用", "采用", "确定", "确认", "定了", "商定", "选用", "решил", "решено", "решение",
    "договорились", "будем использовать", "выбрали", "подтвержд", "утверждено",
)


_DECISION_GATE = literals(_DECISION_NEEDLES)
_ASCII_DECISION_NEEDLES = tuple(needle for needle in _DECISION_NEEDLES if needle.isascii())


# Over a long text `in` tests run at memory speed; over a short one a single scan costs less than the loop.
_LONG_TEXT_CHARS = 300


def may_decide(lower: str) -> bool:
    """False when no decision pattern can match the lower-cased text (see `_DECISION_NEEDLES`)."""
    if len(lower) > _LONG_TEXT_CHARS:
        return any(needle in lower for needle in _DECISION_NEEDLES)
    return _DECISION_GATE.search(lower) is not None


def decision_needles_at(lower: str) -> list[int]:
    """The sorted offsets in lower-cased text where a `_DECISION_NEEDLES` literal starts (substring scans)."""
    found: list[int] = []
    for needle in _ASCII_DECISION_NEEDLES if lower.isascii() else _DECISION_NEEDLES:
        at = lower.find(needle)
        while at >= 0:
            found.append(at)
            at = lower.find(needle, at + 1)
    found.sort()
    return found


def decides(lower: str) -> bool:
    """Whether a decision pattern matches the lower-cased clause."""
    return may_decide(lower) and (ASCII_DECISION_LOWER if lower.isascii() else ANY_DECISION_LOWER).search(lower) is not None

_UNITS = (
    r"ms|s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    r"[kmgtp]i?b|bytes?|%|°[cf]|px|pt|em|rem|cm|mm|km|kg|g|lbs?|usd|eur|gbp|tokens?|rps|qps|cores?|cpus?|"
    r"threads?|workers?|replicas?|retries|attempts|nodes|users|items|bags|passengers|chars|characters|lines|"
    r"words|messages|files|requests|connections|columns|rows|steps|pages|tickets|seats|nights|"
    r"sekunden|minuten|stunden|tage[n]?|secondes|heures|jours|segundos|minutos|horas|días|"
    r"секунд[аы]?|минут[аы]?|час(?:а|ов)?|дн(?:я|ей)|мб|гб|руб(?:лей|ля)?"
)
VALUE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:{_UNITS})(?!\w)", _I),
    re.compile(r"\d+(?:\.\d+)?\s?(?:秒|分钟|小时|天|个|元|块|兆|GB|MB)"),
    re.compile(r"[$€£¥]\s?\d[\d,.]*\d|[$€£¥]\s?\d"),
    re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?(?![\d:])", _I),
    re.compile(r"\b\d{1,2}\s?[ap]\.?m\b\.?", _I),
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\d{1,2}月\d{1,2}[日号]"),
    re.compile(
        r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
        r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.? \d{1,2}(?:st|nd|rd|th)?\b",
        _I,
    ),
    re.compile(r"\b(?:port|ports|puerto|порт[уе]?)\s*:?\s*\d{2,5}\b|端口\s*[:：]?\s*\d{2,5}", _I),
    re.compile(r"\b(?:localhost|[\w-]+(?:\.[\w-]+)+):\d{2,5}\b|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b"),
    re.compile(r"\bv\d+(?:\.\d+)+(?:[-.]?(?:rc|alpha|beta|dev|post)\d*)?\b|\b\d+\.\d+\.\d+(?:[-.]?(?:rc|b|a)\d*)?\b", _I),
    re.compile(r"\b(?:version|versión|versio?n|версия|版本)\s*:?\s*v?\d+(?:\.\d+)*", _I),
    re.compile(r"\b[A-Za-z][\w.-]*\s?(?:==|>=|<=|~=|!=)\s?\d+(?:\.\d+)*"),
    re.compile(
        r"\b(?:python|node|java|go|ruby|php|postgres(?:ql)?|mysql|redis|ubuntu|debian|django|rails|react|numpy|"
        r"pandas|kubernetes|docker|nginx)\s?v?\d+(?:\.\d+)*\b",
        _I,
    ),
)
TICKET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?!(?:UTF|SHA|ISO|GPT|MD|AES|TLS|HTTP|X|COVID)-)[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"),
    re.compile(r"(?<![\w&#/])#\d{1,7}\b"),
    re.compile(r"\b(?:issue|ticket|bug|pr|pull request|mr)\s?#?\d{2,7}\b", _I),
)
URL_PATTERN = re.compile(
    r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s<>\"'`)\]]+|\bwww\.[\w-]+\.[\w./?=&%#-]+"
)
EMAIL_PATTERN = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_EXTENSIONS = (
    r"py|pyi|js|mjs|ts|tsx|jsx|json|ya?ml|toml|ini|cfg|conf|md|rst|txt|sh|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|"
    r"sql|env|lock|xml|html|css|scss|csv|log|proto|tf|dockerfile"
)
PATH_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![\w:/.~-])(?:~|\.\.?)?/(?:[\w.@+-]+/)+[\w.@+-]*"),
    re.compile(r"(?<![\w:/.-])/[\w@+-]+\.\w{1,8}\b"),
    re.compile(r"(?<![\w/.-])(?:[\w.@+-]+/)+[\w@+-]+\.\w{1,8}\b"),
    re.compile(rf"(?<![\w/.-])[\w-]+\.(?:{_EXTENSIONS})\b", _I),
    re.compile(r"\b[A-Za-z]:\\[^\s\"'<>|]+"),
)
IDENTIFIER_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"`[^`\n]{2,80}`"),
    re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"),
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"),
    re.compile(r"\b(?=[A-Z0-9]{5,12}\b)(?=[A-Z]*\d)(?=\d*[A-Z])[A-Z0-9]+\b"),
    re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", _I),
)
_CAP = r"[A-ZÀ-ÖØ-ÞА-ЯЁ][\w'-]+"
NAME_PATTERNS: tuple[re.Pattern[str], ...] = (
    # The lead-in in any case, the name itself capitalised.
    re.compile(
        rf"\b(?i:my name is|i am|i'm|call me|named|mein name ist|ich heiße|je m'appelle|me llamo|mi nombre es|"
        rf"меня зовут)\s+{_CAP}(?:\s{_CAP})?"
    ),
    re.compile(r"我叫\S{1,4}|我的名字是\S{1,4}"),
)

KIND_PATTERNS: tuple[tuple[FactKind, tuple[re.Pattern[str], ...]], ...] = (
    ("url", (URL_PATTERN,)),
    ("email", (EMAIL_PATTERN,)),
    ("value", VALUE_PATTERNS),
    ("ticket", TICKET_PATTERNS),
    ("path", PATH_PATTERNS),
    ("name", NAME_PATTERNS),
    ("identifier", IDENTIFIER_PATTERNS),
)

# Cheap gates (over lower-cased text, no IGNORECASE): a clause that fails one skips that pattern family.
ANY_CONSTRAINT_LOWER = re.compile("|".join(f"(?:{pattern.pattern})" for pattern in CONSTRAINT_PATTERNS))
# For each constraint pattern, one word of each of its phrases (the rarest): a run of word characters the phrase
# holds whole, bounded by \b or by a non-word character in it, so the same run is a whole word (`_WORD`) of any
# lower-cased text the pattern matches. None: the Chinese pattern, which needs CJK text (no word boundaries there).
CONSTRAINT_TOKENS: tuple[frozenset[str] | None, ...] = tuple(
    None if words is None else frozenset(words.split()) for words in (
        "never always must mustn mustnt should shouldn shouldnt avoid prefer preferred prefers sure ensure longer "
        "allowed forbidden prohibited mandatory required only stop circumstances times rather",
        "don dont not need",  # "don't", "do not", "doesn't need"
        "nie niemals immer stets muss müssen musst müsst darf dürfen darfst dürft sollst sollt sollte sollten keinen "
        "keinesfalls vermeide vermeiden vermeidet bevorzuge bevorzugen bitte verboten erforderlich ausschließlich noch",
        "jamais toujours pas faut dois doit doivent devez devons interdit obligatoire évite éviter évitez préfère "
        "préfèrer préfèrez préfére préférer préférez uniquement",  # "pas"/"jamais" also end "ne ... pas"
        "nunca siempre jamás debe debes deben debemos hay tienes tenemos evita evitar evitan prefiero preferimos "
        "prohibido obligatorio únicamente no",
        None,
        "никогда всегда нельзя должен должна должно должны обязательно запрещено предпочитаю избегай избегайте только "
        "коем не",
    )
)
_WORD = re.compile(r"\w+")
# Over ASCII text the runs are read through a byte table that blanks every character but a word character (a
# letter, a digit, "_"): one `bytes.translate` and a split, half the time of the scan.
_ASCII_NON_WORD = bytes.maketrans(
    bytes(range(128)), bytes(code if chr(code).isalnum() or code == ord("_") else ord(" ") for code in range(128))
)


def word_runs(lower: str) -> frozenset[str]:
    """The runs of word characters of lower-cased text: what `CONSTRAINT_TOKENS` and `DECISION_TOKENS` are tested in."""
    if lower.isascii():
        return frozenset(lower.encode("ascii").translate(_ASCII_NON_WORD).decode("ascii").split())
    return frozenset(_WORD.findall(lower))


def constraint_scan(text: str, lower: str) -> re.Pattern[str] | None:
    """`ANY_CONSTRAINT_LOWER` without the patterns that cannot match `lower` (`text.lower()`), or None if none can.

    A pattern that matches nowhere in the text never wins a position of the combined scan: leaving it out gives
    the same matches, and most chat lines need one or two of the seven languages' patterns.
    """
    return constraint_scan_of(text, word_runs(lower))


def constraint_scan_of(text: str, runs: frozenset[str]) -> re.Pattern[str] | None:
    """`constraint_scan` with the word runs of the lower-cased text read (shared with `may_decide_of`); its ASCII
    twin for an ASCII text (whose lower() is ASCII)."""
    mask = 0
    plain = text.isascii()
    for bit, tokens in enumerate(CONSTRAINT_TOKENS):
        if (not plain and CJK.search(text) is not None) if tokens is None else not tokens.isdisjoint(runs):
            mask |= 1 << bit
    return _constraint_union(mask, plain) if mask else None


# For each decision pattern but the Chinese one (which needs CJK text), one word of each of its phrases, as
# `CONSTRAINT_TOKENS` holds for the constraint patterns: a run of word characters the phrase holds whole.
DECISION_TOKENS = frozenset(
    "decided decision we let lets going agreed settled chose confirmed plan "  # "we'll ...", "let's ...", "the plan is"
    "entschieden entscheidung beschlossen wir festgelegt bestätigt vereinbart geeinigt "  # "wir nehmen|verwenden|bleiben"
    "décidé décision part garde utiliserons utilisera convenu confirmé "
    "decidimos decidido decisión vamos usaremos quedamos acordamos acordado confirmado "
    "решили решено решение договорились использовать выбрали подтверждаю подтверждено утверждено".split()
)


def may_decide_of(text: str, runs: frozenset[str]) -> bool:
    """False when no decision pattern can match `text.lower()`, whose word runs are `runs` (the lower-cased text
    must keep the text's length: the scan of `ANY_DECISION_LOWER` over it is what this gates)."""
    return not DECISION_TOKENS.isdisjoint(runs) or (not text.isascii() and CJK.search(text) is not None)


@lru_cache(maxsize=2 << len(CONSTRAINT_PATTERNS))
def _constraint_union(mask: int, plain: bool) -> re.Pattern[str]:
    parts = (f"(?:{pattern.pattern})" for bit, pattern in enumerate(CONSTRAINT_PATTERNS) if mask >> bit & 1)
    union = re.compile("|".join(parts))
    return ascii_twin(union) if plain else union
NAME_LEAD_LOWER = re.compile(
    r"my name is|i am|i'm|call me|named|mein name ist|ich heiße|je m'appelle|me llamo|mi nombre es|меня зовут|我叫|我的名字"
)
# Literals only (no character class): every alternative opens on a literal, so the engine skips to their first characters.
_ASSIGN_WORDS = (
    r"=|:|：|→| is | ist | lautet | est | es | son | sind | starts | begins | ends | moved to "
    r"|значение|договорились|是|为|為|设为|改成|商定|约定"
    r"|set |chang|switch|updat|move |bump|raise|lower|setze|ändere|mets |cambia|pon |установи|измени"
)
DIGIT = re.compile(r"\d")
ASSIGN_GATE = re.compile(_ASSIGN_WORDS + r"|agreed|settled|decided|auf |accord|convenu|acordamos|quedamos|把|将")

# "don't know", "never used it", "nie gehört": a negated verb of knowing or experience reports, it rules nothing.
NOT_A_RULE = re.compile(
    r"\s+(?:know|knew|think|thought|care|remember|understand|see|mind|used|heard|tried|seen|had|done|been|got|"
    r"worked|really|weiß|gehört|benutzt|sais|connais|sé|conozco|знаю|помню)\b",
    _I,
)
ASCII_NOT_A_RULE = ascii_twin(NOT_A_RULE)

# Key/value statements: "timeout = 30s", "API port: 8443", "set the timeout to 45 s", "le port est 8080".
_KEY = r"(?P<key>[^\W\d][\w.-]*(?:[ \t][^\W\d][\w.-]*){0,2})"
_KV_COPULA = r"\s+(?:is|are|is now|should be|must be|will be|ist|sind|est|sont|es|son|está|равен|равна|равно)\s+"
KEY_VALUE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"^{_KEY}\s*(?::=|=|:(?!//)|：)\s*(?P<value>\S.*)$"),
    re.compile(
        rf"\b(?:set|change|switch|update|move|bump|raise|lower|setze|ändere|mets|change|cambia|pon|установи|измени)\s+"
        rf"(?:the |die |den |das |le |la |les |el |la |los )?{_KEY}\s+(?:to|auf|à|a|en|на)\s+(?P<value>\S.*)$",
        _I,
    ),
    re.compile(rf"(?:^|\b(?:the|our|my|die|der|das|le|la|les|el|los|las)\s+){_KEY}{_KV_COPULA}(?P<value>\S.*)$", _I),
    re.compile(r"(?P<key>[\u4e00-\u9fff]{1,6})(?:是|为|為|改成|改为|设为|设置为)\s*(?P<value>\S.*)$"),
)
# The literals each of KEY_VALUE_PATTERNS cannot match without (see `_NEEDS`); as one alternation each below.
KEY_VALUE_LITERALS: tuple[tuple[str, ...], ...] = (
    (":", "=", "："),
    ("set", "chang", "switch", "updat", "move", "bump", "raise", "lower", "setze", "ändere", "mets", "cambia", "pon",
     "установи", "измени"),
    (" is ", " are ", " is now ", " should be ", " must be ", " will be ", " ist ", " sind ", " est ", " sont ", " es ",
     " son ", " está ", "равен", "равна", "равно"),
    ("是", "为", "為", "改成", "改为", "设为", "设置为"),
)
KEY_VALUE_NEEDS: tuple[re.Pattern[str], ...] = tuple(map(literals, KEY_VALUE_LITERALS))
# The verb of "the X is Y" alone (what `agent.context._ascii.lead_bound` searches first).
KEY_VALUE_COPULA = re.compile(_KV_COPULA, _I)
KEY_VALUE_FORMS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(zip(KEY_VALUE_PATTERNS, KEY_VALUE_NEEDS, strict=True))


def _ascii_key_value_forms() -> tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]:
    """`KEY_VALUE_FORMS` as they run on an ASCII clause: each as its `ascii_twin`, gated by its ASCII literals
    (`ascii_literals`); the Chinese form, whose literals are all CJK, cannot pass its gate there and is left out."""
    forms: list[tuple[re.Pattern[str], re.Pattern[str]]] = []
    for pattern, parts in zip(KEY_VALUE_PATTERNS, KEY_VALUE_LITERALS, strict=True):
        gate = ascii_literals(parts)
        if gate is not None:
            forms.append((ascii_twin(pattern), gate))
    return tuple(forms)


ASCII_KEY_VALUE_FORMS = _ascii_key_value_forms()
SUBJECT_STOPWORDS = frozenset(
    "please the a an to we you i it is are be that this all any our your my und der die das bitte wir du ich "
    "le la les un une de des nous vous il on el los las un una por favor nosotros tu yo пожалуйста мы ты я "
    "actually also and but so now just ok okay then still really again anymore instead from aber auch jetzt doch "
    "mais aussi maintenant pero también ahora но тоже теперь".split()
)
CONSTRAINT_WORDS = re.compile(
    r"\b(?:never|always|don'?t|do not|must(?:n'?t| not)?|should(?:n'?t| not)?|avoid|prefer|make sure|ensure|"
    r"nie|niemals|immer|stets|muss|müssen|darf|dürfen|nicht|kein|keine|jamais|toujours|ne|n'|pas|faut|doit|"
    r"nunca|siempre|jamás|no|debe[sn]?|никогда|всегда|нельзя|не|должен|должны|обязательно)\b",
    _I,
)
CJK_CONSTRAINT_WORDS = re.compile(r"永远不要|不要|从不|绝不|总是|始终|必须|务必|一定要|禁止|不能|不得|请勿|别|只能")
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])")
CLAUSE_SPLIT = re.compile(r"(?<=[;；,，])\s*|\s+[-–—]\s+")
LIST_MARKER = re.compile(r"^(?:[-*•>]+\s+|\d{1,3}[.)]\s+)+")
LEADING_NUMBER = re.compile(r"^[-+]?\d+(?:[.,]\d+)*(?!\w)")
PUNCT_STRIP = re.compile(r"[^\w\s]+")
WHITESPACE = re.compile(r"\s+")
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
