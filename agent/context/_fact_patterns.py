"""The vocabulary of fact extraction beside the fact rules: clause cuts, key/value forms, subject words.

Owns the key/value statement forms and their literals, the words a constraint's subject is read without, the
sentence and clause splits, and `word_runs`. The fact rules themselves (constraints, decisions, values, paths,
identifiers, URLs, e-mails, names) are records in `agent.context.fact_rules`; how a message is cut into
clauses and classified is `agent.context._facts`.
"""
from __future__ import annotations

import re

from agent.context._ascii import ascii_twin
from agent.context._literals import ascii_literals, literals

_WORD = re.compile(r"\w+")
# Over ASCII text the runs are read through a byte table that blanks every character but a word character (a
# letter, a digit, "_"): one `bytes.translate` and a split, half the time of the scan.
_ASCII_NON_WORD = bytes.maketrans(
    bytes(range(128)), bytes(code if chr(code).isalnum() or code == ord("_") else ord(" ") for code in range(128))
)


def word_runs(lower: str) -> frozenset[str]:
    """The runs of word characters of lower-cased text: what the whole words of the constraint and decision rules
    are tested in (`agent.context._rule_compiler.RuleGroup`)."""
    if lower.isascii():
        return frozenset(lower.encode("ascii").translate(_ASCII_NON_WORD).decode("ascii").split())
    return frozenset(_WORD.findall(lower))


_I = re.IGNORECASE

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
