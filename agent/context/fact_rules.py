"""The fact rules of the ledger: what a clause must hold to survive compression verbatim, one record per rule.

A rule is what a reader needs to judge it: its kind, its pattern as written, the rank of its kind (what the
budget drops last) and the speakers whose messages it reads. Nothing here is about speed: the gates, the ASCII
forms and the choice of the patterns worth running on a clause are derived from these records once, at import,
by `agent.context._rule_compiler`. To add a rule, add a record here and a test (see tests/agent/context/
test_fact_rules.py); the kinds read by the key/value forms (`assignment`, `answer`) rank in `FORM_RANKS`.

Order matters twice: kinds of equal rank sort in the order they first appear below (after `FORM_RANKS`), and
the rules of each kind run in their order (the `masks` kinds first, whose matches are blanked before the
other kinds read the clause: a URL's dots and slashes are no path).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

FactKind: TypeAlias = Literal[
    "assignment", "answer", "constraint", "decision", "value", "ticket", "url", "email", "name", "path", "identifier"
]
Speaker: TypeAlias = Literal["user", "assistant"]

USER: frozenset[Speaker] = frozenset({"user"})
BOTH: frozenset[Speaker] = frozenset({"user", "assistant"})

# The kinds stated by a plain "X is Y" statement or a bare answer (`agent.context._key_values`), ranked first:
# they are what people come back for, word for word.
FORM_RANKS: dict[FactKind, int] = {"assignment": 95, "answer": 95}
# Every assistant fact ranks below all user facts (the assistant's clauses only count when they decide).
ASSISTANT_RANK = 45


@dataclass(frozen=True, slots=True)
class FactRule:
    """One pattern whose match makes a clause a fact of `kind`.

    Attributes:
        kind: what the clause states.
        pattern: the regular expression, as a reader writes it.
        rank: the importance of the kind for the budget (higher is dropped later); one rank per kind.
        scope: whose messages it reads (the ledger reads user and assistant messages, never tool results).
        ignore_case: match case-blind.
        masks: its matches are blanked before the other kinds read the clause.
        note: what it catches, for the reader (a language, an example).
    """

    kind: FactKind
    pattern: str
    rank: int
    scope: frozenset[Speaker] = USER
    ignore_case: bool = False
    masks: bool = False
    note: str = ""


def _constraint(pattern: str, note: str, *, ignore_case: bool = True) -> FactRule:
    return FactRule("constraint", pattern, 90, USER, ignore_case, note=note)


def _decision(pattern: str, note: str, *, ignore_case: bool = True) -> FactRule:
    return FactRule("decision", pattern, 85, BOTH, ignore_case, note=note)


def _value(pattern: str, note: str, *, ignore_case: bool = False) -> FactRule:
    return FactRule("value", pattern, 75, USER, ignore_case, note=note)


_UNITS = (
    r"ms|s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    r"[kmgtp]i?b|bytes?|%|°[cf]|px|pt|em|rem|cm|mm|km|kg|g|lbs?|usd|eur|gbp|tokens?|rps|qps|cores?|cpus?|"
    r"threads?|workers?|replicas?|retries|attempts|nodes|users|items|bags|passengers|chars|characters|lines|"
    r"words|messages|files|requests|connections|columns|rows|steps|pages|tickets|seats|nights|"
    r"sekunden|minuten|stunden|tage[n]?|secondes|heures|jours|segundos|minutos|horas|días|"
    r"секунд[аы]?|минут[аы]?|час(?:а|ов)?|дн(?:я|ей)|мб|гб|руб(?:лей|ля)?"
)
_EXTENSIONS = (
    r"py|pyi|js|mjs|ts|tsx|jsx|json|ya?ml|toml|ini|cfg|conf|md|rst|txt|sh|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|"
    r"sql|env|lock|xml|html|css|scss|csv|log|proto|tf|dockerfile"
)
_CAP = r"[A-ZÀ-ÖØ-ÞА-ЯЁ][\w'-]+"

RULES: tuple[FactRule, ...] = (
    _constraint(
        r"\b(?:never|always|must(?:n'?t| not)?|should(?:n'?t| not)?|avoid|prefer(?:red|s)?|make sure|ensure|"
        r"no longer|not allowed|forbidden|prohibited|mandatory|required|only use|use only|stop using|"
        r"under no circumstances|at all times|(?:i'd|i would) rather)\b",
        "English",
    ),
    _constraint(
        r"(?:^|[,;:(]\s*|\b(?:please|you|we|and|but|so|just)\s+)(?:don'?t|do not|doesn'?t need)\b",
        "English don't, only at a clause start or after please/you/we (\"I don't know\" is no rule)",
    ),
    _constraint(
        r"\b(?:nie|niemals|immer|stets|muss|müssen|musst|müsst|darf|dürfen|darfst|dürft|sollst|sollt|sollte|"
        r"sollten|auf keinen fall|keinesfalls|vermeide[nt]?|bevorzuge[n]?|bitte nicht|bitte keine?[nmrs]?|"
        r"verboten|erforderlich|ausschließlich|nur noch)\b",
        "German",
    ),
    _constraint(
        r"\b(?:jamais|toujours|surtout pas|il (?:ne )?faut|doi[st]|doivent|devez|devons|interdit|obligatoire|"
        r"évite[rz]?|préf[èé]re[rz]?|uniquement)\b|\b(?:ne|n')\s?\w+\s+(?:pas|jamais)\b",
        "French",
    ),
    _constraint(
        r"\b(?:nunca|siempre|jamás|debe[sn]?|debemos|hay que|tienes que|tenemos que|evita[rn]?|prefiero|"
        r"preferimos|prohibido|obligatorio|únicamente|no\s+\w+(?:es|as|éis|áis))\b",
        "Spanish",
    ),
    _constraint(
        r"永远不要|不要|从不|绝不|决不|总是|始终|必须|务必|一定要|禁止|不能|不得|请勿|不许|不准|只能|只用|偏好|更喜欢|宁愿|避免"
        r"|(?<![特区类级分个告识辨性派])别(?![人的处])",
        "Chinese (no word boundaries; 别 only as \"don't\", not in 特别/区别/别人 ...)",
        ignore_case=False,
    ),
    _constraint(
        r"\b(?:никогда|всегда|нельзя|должен|должна|должно|должны|обязательно|запрещено|предпочитаю|"
        r"избегай(?:те)?|только|ни в коем случае|не\s+\w+(?:й|йте|ите))\b",
        "Russian",
    ),
    _decision(
        r"\b(?:decided|decision|we(?:'ll| will) (?:go with|use|keep|switch to)|let'?s (?:go with|stick with|"
        r"switch to)|going with|agreed|settled on|we chose|i chose|confirmed|the plan is)\b",
        "English",
    ),
    _decision(
        r"\b(?:entschieden|entscheidung|beschlossen|wir nehmen|wir verwenden|wir bleiben bei|festgelegt|bestätigt|"
        r"vereinbart|geeinigt)\b",
        "German",
    ),
    _decision(r"\b(?:décidé|décision|on part sur|on garde|nous utiliserons|on utilisera|convenu|confirmé)\b", "French"),
    _decision(
        r"\b(?:decidimos|decidido|decisión|vamos con|usaremos|nos quedamos con|acordamos|acordado|confirmado)\b",
        "Spanish",
    ),
    _decision(r"决定|决策|就用|采用|确定|确认|定了|商定|选用", "Chinese", ignore_case=False),
    _decision(
        r"\b(?:решили|решено|решение|договорились|будем использовать|выбрали|подтверждаю|подтверждено|утверждено)\b",
        "Russian",
    ),
    _value(rf"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:{_UNITS})(?!\w)", "a number with its unit: 30s, 512 MB, 3 replicas",
           ignore_case=True),
    _value(r"\d+(?:\.\d+)?\s?(?:秒|分钟|小时|天|个|元|块|兆|GB|MB)", "a number with a Chinese unit: 30秒"),
    _value(r"[$€£¥]\s?\d[\d,.]*\d|[$€£¥]\s?\d", "an amount of money: $300"),
    _value(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?(?![\d:])", "a time: 10:30, 7:05 pm", ignore_case=True),
    _value(r"\b\d{1,2}\s?[ap]\.?m\b\.?", "a time: 7am", ignore_case=True),
    _value(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\d{1,2}月\d{1,2}[日号]", "a date: 2024-01-02, 3/4/24, 12月3日"),
    _value(
        r"\d{4}年\d{1,2}月(?:\d{1,2}[日号])?|(?:上午|下午|晚上|早上|中午|凌晨|傍晚)?\d{1,2}[点點时時](?:\d{1,2}分|半|一刻|三刻)?",
        "a date or time written the CJK way: 2026年12月6日, 下午3点, 3点半, 15时30分",
    ),
    _value(
        r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
        r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.? \d{1,2}(?:st|nd|rd|th)?\b",
        "a date: Jan 5th", ignore_case=True,
    ),
    _value(r"\b(?:port|ports|puerto|порт[уе]?)\s*:?\s*\d{2,5}\b|端口\s*[:：]?\s*\d{2,5}", "a port: port 8443",
           ignore_case=True),
    _value(r"\b(?:localhost|[\w-]+(?:\.[\w-]+)+):\d{2,5}\b|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b",
           "a host and port, an IP address"),
    _value(r"\bv\d+(?:\.\d+)+(?:[-.]?(?:rc|alpha|beta|dev|post)\d*)?\b|\b\d+\.\d+\.\d+(?:[-.]?(?:rc|b|a)\d*)?\b",
           "a version: v2.3.1", ignore_case=True),
    _value(r"\b(?:version|versión|versio?n|версия|版本)\s*:?\s*v?\d+(?:\.\d+)*", "a version: version 2",
           ignore_case=True),
    _value(r"\b[A-Za-z][\w.-]*\s?(?:==|>=|<=|~=|!=)\s?\d+(?:\.\d+)*", "a pinned requirement: requests==2.31"),
    _value(
        r"\b(?:python|node|java|go|ruby|php|postgres(?:ql)?|mysql|redis|ubuntu|debian|django|rails|react|numpy|"
        r"pandas|kubernetes|docker|nginx)\s?v?\d+(?:\.\d+)*\b",
        "a product version: python 3.11", ignore_case=True,
    ),
    FactRule("ticket", r"\b(?!(?:UTF|SHA|ISO|GPT|MD|AES|TLS|HTTP|X|COVID)-)[A-Z][A-Z0-9]{1,9}-\d{1,6}\b", 70,
             note="a ticket key: OPS-7 (not UTF-8)"),
    FactRule("ticket", r"(?<![\w&#/])#\d{1,7}\b", 70, note="an issue number: #1234"),
    FactRule("ticket", r"\b(?:issue|ticket|bug|pr|pull request|mr)\s?#?\d{2,7}\b", 70, ignore_case=True,
             note="bug 4711"),
    FactRule("url", r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s<>\"'`)\]]+|\bwww\.[\w-]+\.[\w./?=&%#-]+", 70, masks=True),
    FactRule("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", 70, masks=True),
    FactRule("path", r"(?<![\w:/.~-])(?:~|\.\.?)?/(?:[\w.@+-]+/)+[\w.@+-]*", 65, note="/etc/app/, ~/bin/run"),
    FactRule("path", r"(?<![\w:/.-])/[\w@+-]+\.\w{1,8}\b", 65, note="/setup.py"),
    FactRule("path", r"(?<![\w/.-])(?:[\w.@+-]+/)+[\w@+-]+\.\w{1,8}\b", 65, note="src/main.py"),
    FactRule("path", rf"(?<![\w/.-])[\w-]+\.(?:{_EXTENSIONS})\b", 65, ignore_case=True, note="config.yaml"),
    FactRule("path", r"\b[A-Za-z]:\\[^\s\"'<>|]+", 65, note="C:\\logs"),
    FactRule(
        "name",
        rf"\b(?i:my name is|i am|i'm|call me|named|mein name ist|ich heiße|je m'appelle|me llamo|mi nombre es|"
        rf"меня зовут)\s+{_CAP}(?:\s{_CAP})?",
        70, note="the lead-in in any case, the name itself capitalised",
    ),
    FactRule("name", r"我叫\S{1,4}|我的名字是\S{1,4}", 70),
    FactRule("identifier", r"`[^`\n]{2,80}`", 55, note="`make test`"),
    FactRule("identifier", r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b", 55, note="snake_case"),
    FactRule("identifier", r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b", 55, note="CamelCase"),
    FactRule("identifier", r"\b(?=[A-Z0-9]{5,12}\b)(?=[A-Z]*\d)(?=\d*[A-Z])[A-Z0-9]+\b", 55, note="a code: QX77B"),
    FactRule("identifier", r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", 55, note="a hash: deadbeef1"),
    FactRule("identifier", r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", 55, ignore_case=True,
             note="a UUID"),
)
