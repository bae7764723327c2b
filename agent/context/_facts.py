"""Deterministic fact extraction: which clauses of a message must survive compression verbatim.

Owns the patterns (constraints and decisions in English, German, French,
Spanish, Chinese and Russian; values with units, times, dates, ports,
versions, paths, URLs, e-mails, ticket ids, identifiers, names), how a
message is cut into the minimal clause that carries a fact, and the
deterministic "subject" of a fact (what a newer statement replaces): `k:<key>`
for a key/value statement whose value is a number, path, id or URL
(`timeout = 30s`, `API port: 8443`, `set the timeout to 45 s`, `le port est
8080`, `端口是8080`), and `c:<object>` for a constraint: its first words once
the polarity and modal words (never/always/don't/must, nie/immer, jamais,
nunca, 不要/必须, никогда...) and filler are removed, so "Never use tabs" and
"Always use tabs" share `c:use tabs`. No LLM, no I/O; never raises on any
text. Knows nothing of handoffs, budgets or rendering (see `agent.context.ledger`).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeAlias

from agent.context._statements import (
    CASED_SHAPES,
    RULE_WORDS,
    assignment,
    bare_answer,
    closes_statement,
    is_question,
    literals,
    may_hold_fact,
    names_value,
    stated_value,
    words_of,
)

FactKind: TypeAlias = Literal[
    "assignment", "answer", "constraint", "decision", "value", "ticket", "url", "email", "name", "path", "identifier"
]
Speaker: TypeAlias = Literal["user", "assistant"]

# A fact longer than this is narrowed to its clause, then to a window round the match.
MAX_FACT_CHARS = 220
FACT_WINDOW_CHARS = 90
# Every compression re-reads the previous ledger and overlapping messages: results are cached (values are frozen).
CLASSIFY_CACHE_SIZE = 16_384
EXTRACT_CACHE_SIZE = 4_096
# Fewer words than this make a clause too thin to be a fact on its own.
MIN_IDENTIFIER_FACT_WORDS = 3
MIN_DECISION_FACT_WORDS = 5
# Constraint subjects: the first words of the constrained object.
SUBJECT_MAX_WORDS = 6

# Importance for the budget: what is dropped last. Assistant facts rank below all user facts.
# A plain statement of an exact value ("the door code is 4471") and a bare answer rank first:
# they are what people come back for, word for word.
USER_WEIGHTS: dict[FactKind, int] = {
    "assignment": 95,
    "answer": 95,
    "constraint": 90,
    "decision": 85,
    "value": 75,
    "ticket": 70,
    "url": 70,
    "email": 70,
    "name": 70,
    "path": 65,
    "identifier": 55,
}
ASSISTANT_WEIGHT = 45
# Kinds that make a clause more than "a sentence that mentions some values".
STATEMENT_KINDS: frozenset[FactKind] = frozenset({"constraint", "decision"})

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
_ANY_DECISION_LOWER = re.compile("|".join(f"(?:{pattern.pattern})" for pattern in DECISION_PATTERNS))
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


# Over a long text `in` tests run at memory speed; over a short one a single scan costs less than the loop.
_LONG_TEXT_CHARS = 300


def may_decide(lower: str) -> bool:
    """False when no decision pattern can match the lower-cased text (see `_DECISION_NEEDLES`)."""
    if len(lower) > _LONG_TEXT_CHARS:
        return any(needle in lower for needle in _DECISION_NEEDLES)
    return _DECISION_GATE.search(lower) is not None


def decides(lower: str) -> bool:
    """Whether a decision pattern matches the lower-cased clause."""
    return may_decide(lower) and _ANY_DECISION_LOWER.search(lower) is not None

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

_KIND_PATTERNS: tuple[tuple[FactKind, tuple[re.Pattern[str], ...]], ...] = (
    ("url", (URL_PATTERN,)),
    ("email", (EMAIL_PATTERN,)),
    ("value", VALUE_PATTERNS),
    ("ticket", TICKET_PATTERNS),
    ("path", PATH_PATTERNS),
    ("name", NAME_PATTERNS),
    ("identifier", IDENTIFIER_PATTERNS),
)

# Cheap gates (over lower-cased text, no IGNORECASE): a clause that fails one skips that pattern family.
_ANY_CONSTRAINT_LOWER = re.compile("|".join(f"(?:{pattern.pattern})" for pattern in CONSTRAINT_PATTERNS))
_NAME_LEAD_LOWER = re.compile(
    r"my name is|i am|i'm|call me|named|mein name ist|ich heiße|je m'appelle|me llamo|mi nombre es|меня зовут|我叫|我的名字"
)
_ASSIGN_WORDS = (
    r"[=:：→]| is | ist | lautet | est | es | son | sind | starts | begins | ends | moved to "
    r"|значение|договорились|是|为|為|设为|改成|商定|约定"
    r"|set |chang|switch|updat|move |bump|raise|lower|setze|ändere|mets |cambia|pon |установи|измени"
)
_DIGIT = re.compile(r"\d")
_ASSIGN_GATE = re.compile(_ASSIGN_WORDS + r"|agreed|settled|decided|auf |accord|convenu|acordamos|quedamos|把|将")

# "don't know", "never used it", "nie gehört": a negated verb of knowing or experience reports, it rules nothing.
_NOT_A_RULE = re.compile(
    r"\s+(?:know|knew|think|thought|care|remember|understand|see|mind|used|heard|tried|seen|had|done|been|got|"
    r"worked|really|weiß|gehört|benutzt|sais|connais|sé|conozco|знаю|помню)\b",
    _I,
)

# Key/value statements: "timeout = 30s", "API port: 8443", "set the timeout to 45 s", "le port est 8080".
_KEY = r"(?P<key>[^\W\d][\w.-]*(?:[ \t][^\W\d][\w.-]*){0,2})"
KEY_VALUE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"^{_KEY}\s*(?::=|=|:(?!//)|：)\s*(?P<value>\S.*)$"),
    re.compile(
        rf"\b(?:set|change|switch|update|move|bump|raise|lower|setze|ändere|mets|change|cambia|pon|установи|измени)\s+"
        rf"(?:the |die |den |das |le |la |les |el |la |los )?{_KEY}\s+(?:to|auf|à|a|en|на)\s+(?P<value>\S.*)$",
        _I,
    ),
    re.compile(
        rf"(?:^|\b(?:the|our|my|die|der|das|le|la|les|el|los|las)\s+){_KEY}\s+(?:is|are|is now|should be|must be|"
        rf"will be|ist|sind|est|sont|es|son|está|равен|равна|равно)\s+(?P<value>\S.*)$",
        _I,
    ),
    re.compile(r"(?P<key>[\u4e00-\u9fff]{1,6})(?:是|为|為|改成|改为|设为|设置为)\s*(?P<value>\S.*)$"),
)
# The literals each of KEY_VALUE_PATTERNS cannot match without (see `_NEEDS`), as one alternation each.
_KEY_VALUE_NEEDS: tuple[re.Pattern[str], ...] = tuple(map(literals, (
    (":", "=", "："),
    ("set", "chang", "switch", "updat", "move", "bump", "raise", "lower", "setze", "ändere", "mets", "cambia", "pon",
     "установи", "измени"),
    (" is ", " are ", " is now ", " should be ", " must be ", " will be ", " ist ", " sind ", " est ", " sont ", " es ",
     " son ", " está ", "равен", "равна", "равно"),
    ("是", "为", "為", "改成", "改为", "设为", "设置为"),
)))
_SUBJECT_STOPWORDS = frozenset(
    "please the a an to we you i it is are be that this all any our your my und der die das bitte wir du ich "
    "le la les un une de des nous vous il on el los las un una por favor nosotros tu yo пожалуйста мы ты я "
    "actually also and but so now just ok okay then still really again anymore instead from aber auch jetzt doch "
    "mais aussi maintenant pero también ahora но тоже теперь".split()
)
_CONSTRAINT_WORDS = re.compile(
    r"\b(?:never|always|don'?t|do not|must(?:n'?t| not)?|should(?:n'?t| not)?|avoid|prefer|make sure|ensure|"
    r"nie|niemals|immer|stets|muss|müssen|darf|dürfen|nicht|kein|keine|jamais|toujours|ne|n'|pas|faut|doit|"
    r"nunca|siempre|jamás|no|debe[sn]?|никогда|всегда|нельзя|не|должен|должны|обязательно)\b",
    _I,
)
_CJK_CONSTRAINT_WORDS = re.compile(r"永远不要|不要|从不|绝不|总是|始终|必须|务必|一定要|禁止|不能|不得|请勿|别|只能")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])")
_CLAUSE_SPLIT = re.compile(r"(?<=[;；,，])\s*|\s+[-–—]\s+")
_LIST_MARKER = re.compile(r"^(?:[-*•>]+\s+|\d{1,3}[.)]\s+)+")
_LEADING_NUMBER = re.compile(r"^[-+]?\d+(?:[.,]\d+)*(?!\w)")
_PUNCT_STRIP = re.compile(r"[^\w\s]+")
_WHITESPACE = re.compile(r"\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@dataclass(frozen=True, slots=True)
class Fact:
    """One clause that must survive verbatim.

    Attributes:
        text: the clause, a verbatim substring of one line of the message.
        kinds: what the clause states, most important first.
        subjects: what a newer statement replaces (`c:` constraint objects,
            `k:` keys of key/value statements); empty when none is certain.
        needles: the exact values matched (paths, numbers, ids), for de-duplication.
        weight: importance for the budget (higher is dropped later).
        context: for a bare answer, the question it answers (`who: question`), shown beside it.
    """

    text: str
    kinds: tuple[FactKind, ...]
    subjects: tuple[str, ...]
    needles: tuple[str, ...]
    weight: int
    context: str = ""

    @property
    def is_statement(self) -> bool:
        """A constraint or a decision, not just a sentence carrying values."""
        return any(kind in STATEMENT_KINDS for kind in self.kinds)


MAX_QUESTION_CHARS = 120


def answer_fact(answer: str, question: str, asker: str) -> Fact | None:
    """A bare answer ("4471") to `question` as a fact carrying the question, or None if it is no bare value."""
    token = bare_answer(answer, question)
    if token is None:
        return None
    line = next((ln.strip() for ln in reversed(question.splitlines()) if ln.strip()), "")[:MAX_QUESTION_CHARS]
    subject = _key_words(line)
    return Fact(
        text=answer.strip(), kinds=("answer",), subjects=(f"q:{subject}",) if subject else (), needles=(token,),
        weight=USER_WEIGHTS["answer"], context=f"{asker}: {line}" if line else "",
    )


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used to compare facts."""
    return _WHITESPACE.sub(" ", text.casefold()).strip(" .,;:!?。！？")


# The literal text each pattern cannot match without (any one of these, in lower-cased text): a substring
# test costs a fraction of a scan, and most chat lines lack most of them. A pattern not listed always runs.
_NEEDS_LITERALS: dict[re.Pattern[str], tuple[str, ...]] = {
    VALUE_PATTERNS[1]: ("秒", "分钟", "小时", "天", "个", "元", "块", "兆", "gb", "mb"),
    VALUE_PATTERNS[2]: ("$", "€", "£", "¥"),
    VALUE_PATTERNS[3]: (":",),
    VALUE_PATTERNS[4]: ("am", "pm", "a.m", "p.m"),
    VALUE_PATTERNS[5]: ("-", "/", "月"),
    VALUE_PATTERNS[6]: ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
    VALUE_PATTERNS[7]: ("port", "puerto", "порт", "端口"),
    VALUE_PATTERNS[8]: (":", "."),
    VALUE_PATTERNS[9]: (".",),
    VALUE_PATTERNS[10]: ("version", "versión", "versio", "версия", "版本"),
    VALUE_PATTERNS[11]: ("==", ">=", "<=", "~=", "!="),
    VALUE_PATTERNS[12]: (
        "python", "node", "java", "go", "ruby", "php", "postgres", "mysql", "redis", "ubuntu", "debian", "django",
        "rails", "react", "numpy", "pandas", "kubernetes", "docker", "nginx",
    ),
    TICKET_PATTERNS[0]: ("-",),
    TICKET_PATTERNS[1]: ("#",),
    TICKET_PATTERNS[2]: ("issue", "ticket", "bug", "pr", "pull request", "mr"),
    PATH_PATTERNS[0]: ("/",),
    PATH_PATTERNS[1]: ("/",),
    PATH_PATTERNS[2]: ("/",),
    PATH_PATTERNS[3]: (".",),
    PATH_PATTERNS[4]: (":\\",),
    IDENTIFIER_PATTERNS[0]: ("`",),
    IDENTIFIER_PATTERNS[1]: ("_",),
    IDENTIFIER_PATTERNS[5]: ("-",),
}


_NEEDS = {pattern: literals(parts) for pattern, parts in _NEEDS_LITERALS.items()}


def _spans(
    text: str, patterns: tuple[re.Pattern[str], ...], lower: str | None = None
) -> Iterator[tuple[int, int]]:
    for pattern in patterns:
        needs = _NEEDS.get(pattern) if lower is not None else None
        if needs is not None and needs.search(lower) is None:  # type: ignore[arg-type]
            continue
        for match in pattern.finditer(text):
            if match.end() > match.start():
                yield match.start(), match.end()


def _families(text: str, lower: str, speaker: Speaker) -> list[tuple[FactKind, tuple[re.Pattern[str], ...]]]:
    """The pattern families that can match `text` at all (each skipped on a cheap test of what it needs)."""
    digit = _DIGIT.search(text) is not None
    wanted: list[tuple[FactKind, tuple[re.Pattern[str], ...]]] = []
    for kind, patterns in _KIND_PATTERNS:
        if kind == "url":
            ok = "://" in text or "www." in lower
        elif kind == "email":
            ok = "@" in text
        elif kind in ("value", "ticket"):
            ok = digit
        elif kind == "path":
            ok = "/" in text or "\\" in text or "." in text
        elif kind == "name":
            ok = _NAME_LEAD_LOWER.search(lower) is not None
        else:
            ok = digit or "`" in text or "_" in text or CASED_SHAPES.search(text) is not None
        if ok:
            wanted.append((kind, patterns))
    return wanted


def _matches(text: str, speaker: Speaker) -> list[tuple[FactKind, int, int]]:
    """Every (kind, start, end) in `text`; URLs and e-mails are masked before paths and ids."""
    found: list[tuple[FactKind, int, int]] = []
    lower = text.lower()
    # The rule patterns only run when one of their words (or CJK text) is there: see `RULE_WORDS`.
    rules = _CJK.search(text) is not None or not RULE_WORDS.isdisjoint(words_of(lower))
    # One scan of the combined pattern over the lower-cased text finds the rule words (lower() keeps the
    # offsets unless a character changes length: then each pattern runs on the text).
    same = len(lower) == len(text)
    if rules and speaker == "user":
        spans = _lower_spans(lower, _ANY_CONSTRAINT_LOWER) if same else list(_spans(text, CONSTRAINT_PATTERNS))
        found.extend(("constraint", s, e) for s, e in spans if not _NOT_A_RULE.match(text, e))
    if rules:
        if may_decide(lower):
            spans = _lower_spans(lower, _ANY_DECISION_LOWER) if same else list(_spans(text, DECISION_PATTERNS))
            found.extend(("decision", s, e) for s, e in spans)
    masked = text
    for kind, patterns in _families(text, lower, speaker):
        for start, end in _spans(masked, patterns, lower):
            needle = text[start:end].rstrip(".,;:!?)")
            if needle:
                found.append((kind, start, start + len(needle)))
        if kind in ("url", "email"):
            masked = _mask(masked, _spans(masked, patterns))
    key_value = _key_value(text) if _ASSIGN_GATE.search(lower) or names_value(lower) else None
    if key_value is not None:
        value = key_value[1]
        start = text.rfind(value)
        number = _LEADING_NUMBER.match(value)
        if number:
            found.append(("value", start, start + number.end()))
        words = value.split()
        token = stated_value(words[0], key_value[0]) if words else None
        if token is not None and closes_statement(value[value.find(words[0]) + len(words[0]):]):
            found.append(("assignment", start, start + len(token)))
    return found


def _lower_spans(lower: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in pattern.finditer(lower) if m.end() > m.start()]


def _mask(text: str, spans: Iterator[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


@lru_cache(maxsize=CLASSIFY_CACHE_SIZE)
def _key_value(clause: str) -> tuple[str, str] | None:
    """(normalised key, value) of a key/value statement whose value is a number, path, id, URL or exact token."""
    body = _LIST_MARKER.sub("", clause.strip())
    stated = assignment(body)
    if stated is not None:
        key = _key_words(stated[0])
        if key:
            return key, stated[1]
    lower = body.lower()
    for pattern, needs in zip(KEY_VALUE_PATTERNS, _KEY_VALUE_NEEDS, strict=True):
        if needs.search(lower) is None:
            continue
        match = pattern.search(body)
        if match is None:
            continue
        value = match.group("value")
        first = value.split()[0] if value.split() else ""
        if not (_LEADING_NUMBER.match(value) or _has_value(first) or stated_value(first, match.group("key"))):
            continue
        key = _key_words(match.group("key"))
        if key:
            return key, value
    return None


def _key_words(raw: str) -> str:
    words = normalise(_PUNCT_STRIP.sub(" ", raw)).split()
    return " ".join(w for w in words if w not in _SUBJECT_STOPWORDS)


def _subjects(clause: str, kinds: set[FactKind]) -> tuple[str, ...]:
    subjects: list[str] = []
    key_value = _key_value(clause)
    if key_value is not None:
        subjects.append(f"k:{key_value[0]}")
    if "constraint" in kinds:
        body = _LIST_MARKER.sub("", clause.strip())
        stripped = _CJK_CONSTRAINT_WORDS.sub(" ", _CONSTRAINT_WORDS.sub(" ", body))
        words = [w for w in normalise(_PUNCT_STRIP.sub(" ", stripped)).split() if w not in _SUBJECT_STOPWORDS]
        if words:
            subjects.append("c:" + " ".join(words[:SUBJECT_MAX_WORDS]))
    return tuple(subjects)


# Every value, path, id and URL pattern needs one of these characters: a word without any holds none.
_VALUE_CHARS = re.compile(r"[\d/.\\_`$€£¥A-Z]")
_VALUE_FAMILIES = VALUE_PATTERNS + PATH_PATTERNS + IDENTIFIER_PATTERNS + (URL_PATTERN,)


def _has_value(text: str) -> bool:
    if _VALUE_CHARS.search(text) is None:
        return False
    return any(True for _ in _spans(text, _VALUE_FAMILIES, text.lower()))


def _narrow(sentence: str, start: int, end: int) -> str:
    """The clause of `sentence` holding [start, end); a window round it if the clause is still long."""
    offset = 0
    for part in _CLAUSE_SPLIT.split(sentence):
        index = sentence.find(part, offset)
        if index < 0:
            continue
        offset = index + len(part)
        if index <= start < index + len(part) or (start < index + len(part) and end > index):
            if len(part) <= MAX_FACT_CHARS and end <= index + len(part):
                return part
            break
    lo = max(0, start - FACT_WINDOW_CHARS)
    hi = min(len(sentence), end + FACT_WINDOW_CHARS)
    while lo > 0 and not sentence[lo - 1].isspace():
        lo += 1
        if lo >= start:
            lo = start
            break
    while hi < len(sentence) and not sentence[hi].isspace():
        hi -= 1
        if hi <= end:
            hi = end
            break
    return sentence[lo:hi]


def _units(line: str) -> Iterator[str]:
    for sentence in _SENTENCE_SPLIT.split(line):
        sentence = _LIST_MARKER.sub("", sentence.strip()).strip()
        if sentence:
            yield sentence


@lru_cache(maxsize=CLASSIFY_CACHE_SIZE)
def classify(text: str, speaker: Speaker) -> Fact | None:
    """The fact a clause states, or None. Deterministic: parsing a stored fact back gives the same fact."""
    if speaker == "assistant" and not decides(text.lower()):
        return None  # the assistant's clauses only count as decisions: skip the other patterns
    if is_question(text):
        return None  # asking for a value states none; the answer does (see `agent.context.ledger`)
    if speaker == "user" and not may_hold_fact(text, text.lower()):
        return None
    matches = _matches(text, speaker)
    if not matches:
        return None
    kinds = {kind for kind, _, _ in matches}
    if speaker == "assistant" and "decision" not in kinds:
        return None
    if _too_thin(text, kinds):
        return None
    ordered = tuple(sorted(kinds, key=lambda k: -USER_WEIGHTS[k]))
    weight = USER_WEIGHTS[ordered[0]] if speaker == "user" else ASSISTANT_WEIGHT
    needles = tuple(sorted({text[s:e] for kind, s, e in matches if kind not in STATEMENT_KINDS}))
    return Fact(text=text, kinds=ordered, subjects=_subjects(text, kinds), needles=needles, weight=weight)


def _too_thin(text: str, kinds: set[FactKind]) -> bool:
    """A bare identifier ("your_command_here") or a bare decision opener ("So the plan is:") says nothing."""
    words = len(text.split()) if not _CJK.search(text) else len(text) // 2
    if kinds <= {"identifier"}:
        return words < MIN_IDENTIFIER_FACT_WORDS
    if kinds <= {"decision"}:
        return words < MIN_DECISION_FACT_WORDS
    return False


@lru_cache(maxsize=EXTRACT_CACHE_SIZE)
def extract_facts(text: str, speaker: Speaker) -> tuple[Fact, ...]:
    """The facts of one message, in order, each the minimal verbatim clause holding it.

    Args:
        text: the message text (any language, any size; never raises).
        speaker: "user" facts include constraints and bare values; the
            assistant's only count when it states a decision.
    """
    lower = text.lower()
    if speaker == "assistant" and not may_decide(lower):  # the pattern runs per clause (`classify`)
        return ()
    if not may_hold_fact(text, lower):
        return ()  # the prefilter: no shape of a value and no rule word anywhere in the message
    facts: list[Fact] = []
    seen: set[str] = set()
    for line in text.splitlines():
        for sentence in _units(line):
            for clause in _clauses(sentence, speaker):
                fact = classify(clause, speaker)
                key = normalise(clause)
                if fact is not None and key not in seen:
                    seen.add(key)
                    facts.append(fact)
    return tuple(facts)


def _clauses(sentence: str, speaker: Speaker) -> Iterator[str]:
    if len(sentence) <= MAX_FACT_CHARS:
        yield sentence
        return
    for kind, start, end in sorted(_matches(sentence, speaker), key=lambda m: m[1]):
        if speaker == "assistant" and kind != "decision":
            continue
        clause = _narrow(sentence, start, end).strip()
        if clause:
            yield clause
