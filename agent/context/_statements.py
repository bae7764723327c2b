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
from collections.abc import Iterator
from functools import lru_cache

from agent.context._ascii import ascii_twin, held_table, lead_bound, lowered_matches, lowered_twin
from agent.context._literals import ascii_literals, literals
from agent.context._rule_compiler import words_for
from agent.context._ruleset import RULESET

_I = re.IGNORECASE
QUESTION_CACHE_SIZE = 4_096

# One exact value: quoted text, a token holding a digit, a hyphenated/underscored/dotted name, an all-caps code.
_ASCII_TOKEN = r"[A-Za-z0-9_.+/:@#-]"
_QUOTED_TOKEN = r"[`\"«“][^`\"»”\n]{1,80}[`\"»”]"
_DIGIT_TOKEN = rf"(?<![A-Za-z0-9_.-])(?={_ASCII_TOKEN}*\d){_ASCII_TOKEN}*[A-Za-z0-9]"
_JOINED_TOKEN = r"(?<![A-Za-z0-9_-])[A-Za-z]+(?:[-_.][A-Za-z0-9]+)+"
EXACT_TOKEN = re.compile(f"{_QUOTED_TOKEN}|{_DIGIT_TOKEN}|{_JOINED_TOKEN}")
# Shapes of an exact token that name a standard, not a value somebody chose.
COMMON_TOKENS = frozenset(
    "utf-8 utf-16 utf-32 iso-8859-1 sha-1 sha-256 x86 x86_64 x86-64 amd64 i386 arm64 64-bit 32-bit e-mail "
    "e.g i.e etc. a.m p.m".split()
)
_TRAILING = ".,;:!?)]}»”\"'。，！？；"

_VALUE_NOUN_WORDS = frozenset(
    "code password passphrase passcode pin token key id tag ref reference secret serial login username "
    "codename nickname passwort schlüssel kennwort code clé clave contraseña código пароль код "
    "ключ токен".split()
)
# Nouns whose value is arbitrary: after them any word is a value by position (see `stated_value`).
VALUE_NOUNS = _VALUE_NOUN_WORDS
SECRET_NOUNS = frozenset("password passphrase passcode pin secret codename username passwort kennwort contraseña пароль".split())

# Assignment forms: (?P<key>) is what the value is about, (?P<value>) must be an exact token.
_K = r"(?P<key>[^\W\d][\w.'-]*(?:[ \t][\w.'-]+){0,4})"  # "the shard key for region 2 is ..."
_K_WORDS = r"(?P<key>[^\W\d][\w.'-]*(?:[ \t][^\W\d][\w.'-]*){0,3})"
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
        rf"(?:^|\b(?:the|our|my|new|die|der|das|le|la|les|el|los|las)\s+){_K}\s+(?:is now|is at|is on|is due|is|are|"
        rf"will be|should be|changed to|moved to|starts at|starts on|starts|begins|ends|ist jetzt|ist|lautet|"
        rf"est maintenant|est|es ahora|es|теперь|будет|—)\s+{_V}",
        _I,
    ),
    # "X = Y", "X: Y": the key opens the clause (a colon inside a line of chatter or a log is no statement).
    re.compile(rf"(?:^|[(,;:]\s*)(?:the |our )?{_K_WORDS}\s*(?:=|:=|:(?!//)|：|->|→)\s*{_V}"),
    re.compile(r"(?:把|将)(?P<key>[\u4e00-\u9fff\w]{1,12})(?:设为|设置为|改为|改成)\s*(?P<value>\S+)"),
    # No verb at all after a noun whose value is arbitrary: "door code QX-77", "код доступа 7731", "pin 4471".
    re.compile(rf"(?P<key>\b(?:{'|'.join(sorted(_VALUE_NOUN_WORDS))})(?:[ \t][^\W\d][\w'-]*)?)[ \t]+{_V}\s*$", _I),
)

_NO_VERB = ASSIGNMENTS[-1]
_NO_BOUND = re.compile("")  # an anchor found at 0: `lead_bound` gives 0 (a form without a lowered twin)
_COPULAS = (
    " is ", " are ", " will be ", " should be ", " changed to ", " moved to ", " starts ", " begins ", " ends ",
    " ist ", " lautet ", " est ", " es ", "теперь", "будет", "—",
)
# For each pattern of ASSIGNMENTS, the lower-case literals it cannot match without (any one of them): most
# chat lines have none of a pattern's, and a substring test costs a fraction of one scan by the pattern.
_ASSIGNMENT_NEEDS: tuple[tuple[str, ...], ...] = (
    ("value",), ("wert",), ("valeur",), ("valor",), ("значение",), ("的值",),
    ("agreed", "settled", "decided"), ("auf",), ("accord", "convenu", "décidé"),
    ("acordamos", "acordado", "decidimos", "quedamos"), ("договорились",), ("商定", "约定", "同意", "决定"),
    _COPULAS, ("=", ":", "：", "->", "→"), ("把", "将"), (),
)
# Every literal some assignment form needs (the no-verb form needs a value noun instead, a word).
FORM_LITERALS = frozenset(part for parts in _ASSIGNMENT_NEEDS for part in parts)
_ASSIGNMENT_GATES = tuple(literals(parts) if parts else None for parts in _ASSIGNMENT_NEEDS)
# The "value of", "agreed on" forms need rarer words than the copula and "X: Y" forms after them: one scan
# for all of their literals rules the twelve out together on most clauses.
_RARE_FORMS = 12
_RARE_GATE = literals(tuple(part for parts in _ASSIGNMENT_NEEDS[:_RARE_FORMS] for part in parts))
_ASCII_RARE_GATE = ascii_literals(tuple(part for parts in _ASSIGNMENT_NEEDS[:_RARE_FORMS] for part in parts))

# A bare answer: a few words at most, holding an exact token (see `bare_answer`).
MAX_ANSWER_WORDS = 3

# The prefilter: a clause with no shape of a value (digit, path, id, code, quote, CJK text) and none of the rule
# words (`RULE_WORDS`, below) or value nouns can match no fact rule. One character class first (the regex engine
# skips to it; alternatives opening on different classes are tried at every position): a shape character, or a
# "-"/"." between two letters, as in "[...]|[a-z][-.][a-z]".
SHAPES = re.compile(r"[0-9/\\@_`=#$€£¥\"«“\u3040-\u30ff\u4e00-\u9fff.-](?:(?<=[a-z][.-])[a-z]|(?<![.-]))")
_SEPARATORS = str.maketrans({c: " " for c in ".,;:!?()[]{}<>\"«»“”*~|+=&^%$#@/\\-—–…"} | {"’": "'"})


def _in_word(char: str) -> bool:
    """A character `words_of` keeps inside a word (no whitespace, no separator)."""
    return not char.isspace() and _SEPARATORS.get(ord(char)) != " "


# A constraint, decision or name rule needs one of these words (`words_of`), each the longest word a way to match
# it holds whole (`agent.context._rule_compiler.words_for`); `RULE_REST`: the gate of the rules with no such word
# (the Chinese ones, by their literals). A word-set test costs a fraction of one pass of those patterns, and most
# lines of a group chat stop here.
RULE_WORDS, RULE_REST = words_for((c for c in RULESET.compiled if c.kind in ("constraint", "decision", "name")), _in_word)


# `_SEPARATORS` over ASCII text as a byte table: `str.translate` looks each distinct character up in the dict on
# every call, `bytes.translate` reads one table (a third of the time, encoding and decoding included).
_ASCII_SEPARATORS = bytes.maketrans(
    "".join(chr(code) for code in _SEPARATORS if code < 128).encode(), b" " * sum(code < 128 for code in _SEPARATORS)
)


def words_of(lower: str) -> frozenset[str]:
    """The words of lower-cased text (apostrophes kept: "don't")."""
    if lower.isascii():  # split as text: its whitespace (U+001C..U+001F too) is what `str.split` splits on
        return frozenset(lower.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split())
    return frozenset(lower.translate(_SEPARATORS).split())


_GATE_WORDS = RULE_WORDS | VALUE_NOUNS
# A chat line often opens by addressing someone ("DG19075: why?", "jeroen_, try it"): a nickname is no value.
_ADDRESSEE = re.compile(r"^[\w\[\]|^`{}-]{1,32}[:,] ")


def may_hold_fact(text: str, lower: str) -> bool:
    """False when no fact pattern can match `text` (the prefilter; `lower` is `text.lower()`)."""
    return read_prefilter(text, lower)[0]


def read_prefilter(text: str, lower: str) -> tuple[bool, frozenset[str] | bool]:
    """`may_hold_fact`, and `words_of(lower)` when it read the words (else True)."""
    plain = text.isascii()  # over ASCII the scans' twins (`agent.context._ascii`)
    addressee = (_ASCII_ADDRESSEE if plain else _ADDRESSEE).match(text)
    whole = lower
    if addressee is not None:
        text, lower = text[addressee.end():], lower[addressee.end():]
    if plain:
        # A capital makes an ASCII text differ from its lower(): compared before the scan for capitals.
        if _ASCII_SHAPES.search(lower) is not None or (text != lower and ASCII_CASED_SHAPES.search(text) is not None):
            return True, True
    elif SHAPES.search(lower) is not None or CASED_SHAPES.search(text) is not None:
        return True, True
    words = words_of(lower)
    holds = not _GATE_WORDS.isdisjoint(words) or (not plain and RULE_REST.passes(text, lower, plain))
    if addressee is None:
        return holds, words
    # The addressee ends with a separator and a space, so no word runs across it (when lower() kept the offsets).
    return holds, words | words_of(whole[:addressee.end()]) if len(whole) == len(text) + addressee.end() else True


# Original-case shapes the lower-case gate cannot see: CamelCase (all-caps codes hold a digit).
CASED_SHAPES = re.compile(r"[A-Z](?:(?<=[a-z0-9][A-Z])|[A-Z]{3})")  # "[a-z0-9][A-Z]|[A-Z]{4}", opening on the capital
ASCII_CASED_SHAPES = ascii_twin(CASED_SHAPES)
_ASCII_SHAPES = ascii_twin(SHAPES)
_ASCII_ADDRESSEE = ascii_twin(_ADDRESSEE)


def exact_value(text: str) -> str | None:
    """`text` as an exact token if it is one (trailing punctuation aside), else None."""
    value = text.strip()
    tried = None
    for candidate in (value, value.rstrip(".,;:!?)]}。，！？；"), value.rstrip(_TRAILING)):
        if candidate == tried or candidate.isalpha():
            continue  # nothing stripped (the same text fails the same way), or letters alone: no token shape
        tried = candidate
        match = EXACT_TOKEN.fullmatch(candidate) if candidate else None
        if match is not None:
            token = match.group(0)
            # A link is a mention (the URL kind of `agent.context._facts`), not a value somebody chose.
            return None if token.casefold() in COMMON_TOKENS or "://" in token else token
    return None


# A word with no shape of a value is still one by its position, right after "is/=/:/set to": a code of
# capitals ("the code is YTHFKSA"), or any single word when the key names something whose value is
# arbitrary ("the password is swordfish", "the door code is banana"). An ordinary word after "is" is not
# ("the problem is mine", "the fix is simple", "the code is simple").
_CODE_WORD = re.compile(r"[A-Z]{4,24}")
_HAS_DIGIT = re.compile(r"\d")
_PLAIN_WORD = re.compile(r"[^\W\d_]{3,32}")


def _odd_token(word: str) -> bool:
    """ "Tr0ub4dor&3", "8812#": a digit in a word the exact-token shape does not cover (links and standards
    such as UTF-8 were turned down by shape, not for want of one)."""
    if not 3 <= len(word) <= 64 or _HAS_DIGIT.search(word) is None or "://" in word:
        return False
    return EXACT_TOKEN.fullmatch(word) is None and word.casefold() not in COMMON_TOKENS


def stated_value(text: str, key: str) -> str | None:
    """The exact value at the value position of a statement about `key`: any exact token, or a word
    that is one by position only (see `_CODE_WORD`, `VALUE_NOUNS`)."""
    token = exact_value(text)
    if token is not None:
        return token
    word = text.strip().rstrip(_TRAILING)
    if _CODE_WORD.fullmatch(word) is not None or _odd_token(word):
        return word
    keys = key.casefold().split()
    if not keys or keys[-1] not in VALUE_NOUNS or _PLAIN_WORD.fullmatch(word) is None:
        return None
    if word.casefold() in NOT_VALUES:
        return None  # "the password is wrong", "the pin is required": a state, not a value
    # "the code is simple", "the key is consistency": a bare "code" or "key" may be about anything; a
    # password is always a value, and so is a "door code" or a "backup key".
    return word if keys[-1] in SECRET_NOUNS or len(keys) >= 2 else None


# Words that say how a value is rather than what it is (after "the password is ..."), in the ledger's languages.
NOT_VALUES = frozenset(
    "wrong incorrect invalid valid required needed expired missing empty blank correct right fine ok okay too "
    "not very same different changed reset set there here gone broken weak strong long short secret private "
    "public new old hidden visible mandatory optional unknown known obvious simple easy hard the a an my your "
    "our their his her its this that what which fixed working ready done "
    "falsch richtig ungültig abgelaufen leer neu alt faux correct invalide expiré vide nouveau ancien "
    "incorrecto incorrecta correcto válido inválido vacío nuevo viejo неверный верный пустой новый старый".split()
)


MAX_TAIL_CHARS = 40


def closes_statement(rest: str) -> bool:
    """What follows a stated value ends the statement: nothing, one word ("... 4471 please"), or punctuation
    and a short tail ("..., don't lose it").

    "the LUN is stuck writing LBA=2940h" states a value; "w32codecs: win32 binary codecs" describes one, and
    "Change merged: jenkins-bot; [mediawiki/core] (master) - https://..." is a log line, not a statement.
    """
    stripped = rest.strip()
    if not stripped or len(stripped.split()) <= 1:
        return True
    return stripped[0] in ",;.!)(—–-:。，；！" and len(stripped) <= MAX_TAIL_CHARS


def assignment(clause: str, lower: str, words: frozenset[str]) -> tuple[str, str] | None:
    """(key, exact value) of a plain statement of a value ("the door code is 4471"), or None.

    `lower` and `words` are the clause's `lower()` and `words_of(lower)`, read once by the caller.
    """
    nouns = not VALUE_NOUNS.isdisjoint(words)  # both tests below need it
    # The cheapest test first: the token scan tries its look-arounds at every position.
    if not nouns and _CAPS_WORD.search(clause) is None and not _holds_token(clause):
        return None  # no value to state, not even by position: skip the patterns
    plain = clause.isascii()
    if plain:  # the forms' ASCII twins, gated by their ASCII literals (the forms needing CJK or Cyrillic ones are out)
        rare = _ASCII_RARE_GATE is not None and _ASCII_RARE_GATE.search(lower) is not None
        forms, no_verb, colon = _ASCII_FORMS if rare else _ASCII_COMMON_FORMS, _ASCII_NO_VERB, _ASCII_COLON_FORM
    else:
        forms, no_verb, colon = _FORMS if _RARE_GATE.search(lower) is not None else _COMMON_FORMS, _NO_VERB, _COLON_FORM
    for pattern, needs in forms:
        if needs is not None and needs.search(lower) is None:
            continue
        if pattern is no_verb and not nouns:
            continue
        if pattern is colon:
            matches = _colon_form_matches(clause, ascii=plain)
        elif plain and (finder := _LOWERED_FORMS.get(pattern)) is not None:
            start = lead_bound(lower, _COPULA, _COPULA_HELD) if pattern is _ASCII_COPULA_FORM else 0
            if start < 0:
                continue  # no verb: the copula form matches nowhere
            matches = lowered_matches(pattern, finder, clause, lower, start)  # `lower` is the clause's
        else:
            matches = pattern.finditer(clause)
        for match in matches:
            # With no verb, only a value-shaped token or a code of capitals is one ("login fails" is not).
            value = stated_value(match.group("value"), match.group("key") if pattern is not no_verb else "")
            after = match.start("value") + len(value) if value and match.end("value") == match.end() else match.end()
            positional = value is not None and exact_value(value) is None and _CODE_WORD.fullmatch(value) is None
            rest = clause[after:].strip()
            # A plain word is a value only where the clause ends ("... is swordfish", not "... is too short").
            if positional and rest and rest[0] not in _TRAILING + "—–-(":
                continue
            if value is not None and closes_statement(clause[after:]):
                return match.group("key"), value
    return None


# Every exact token holds one of these (a quote opens one, a digit or a joint is in it): one class, which the
# engine skips to, where `EXACT_TOKEN` tries its look-behinds and look-ahead at every position.
_TOKEN_CHAR = re.compile(r"[\d`\"«“_.-]")


# An ASCII digit is always inside a match of `EXACT_TOKEN` (its second form, from the start of the run of
# [A-Za-z0-9_.-] holding the digit, to the digit): no need to run the whole scan.
_ASCII_DIGIT = re.compile(r"[0-9]")


# Without a digit the second form of `EXACT_TOKEN` cannot match, and it scans slowest (a look-ahead tried at
# every word): an ASCII text with no digit holds a token where the other two forms find one.
_ASCII_DIGITLESS_TOKEN = ascii_twin(re.compile(f"{_QUOTED_TOKEN}|{_JOINED_TOKEN}"))


def _holds_token(text: str) -> bool:
    if _ASCII_DIGIT.search(text) is not None:
        return True
    if _TOKEN_CHAR.search(text) is None:
        return False
    if text.isascii():  # and so no digit at all (the ASCII digits are the only ASCII ones)
        return _ASCII_DIGITLESS_TOKEN.search(text) is not None
    return EXACT_TOKEN.search(text) is not None


# Each form with its gate, paired once; most clauses hold none of the rare forms' literals.
_FORMS = tuple(zip(ASSIGNMENTS, _ASSIGNMENT_GATES, strict=True))
_COMMON_FORMS = _FORMS[_RARE_FORMS:]


def _ascii_forms(forms: tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...], first: int) -> tuple[
    tuple[re.Pattern[str], re.Pattern[str] | None], ...
]:
    """`forms` (from `ASSIGNMENTS[first]` on) as they run on an ASCII clause: each as its `ascii_twin`, gated by
    its ASCII literals; a form with literals but no ASCII one cannot pass its gate there and is left out."""
    kept: list[tuple[re.Pattern[str], re.Pattern[str] | None]] = []
    for (pattern, gate), parts in zip(forms, _ASSIGNMENT_NEEDS[first:], strict=True):
        if gate is None:
            kept.append((ascii_twin(pattern), None))
        elif (ascii_gate := ascii_literals(parts)) is not None:
            kept.append((ascii_twin(pattern), ascii_gate))
    return tuple(kept)


_ASCII_FORMS = _ascii_forms(_FORMS, 0)
_ASCII_COMMON_FORMS = _ascii_forms(_COMMON_FORMS, _RARE_FORMS)
_ASCII_NO_VERB = ascii_twin(_NO_VERB)
# The case-blind forms that scan slowest (they open on a word boundary and a choice of words), found on the
# lower-cased ASCII clause by their case-sensitive twins: the copula form and the no-verb form.
_LOWERED_FORMS = {
    ascii_twin(form): finder for form in (ASSIGNMENTS[12], _NO_VERB) if (finder := lowered_twin(form)) is not None
}
# Ahead of its verb the copula form holds only a determiner and its key (word characters, ".", "'", "-",
# whitespace): on an ASCII clause its matches begin after the last other character ahead of the first verb.
_ASCII_COPULA_FORM = ascii_twin(ASSIGNMENTS[12])
_COPULA = lowered_twin(re.compile(ASSIGNMENTS[12].pattern.split(_K, 1)[1].rsplit(_V, 1)[0], _I)) or _NO_BOUND
_COPULA_HELD = held_table(".'-")

# The "X = Y", "X: Y" form opens on "^" or a punctuation mark: past the first position only the mark can open a
# match, and the form without its "^" alternative opens on one character class, which the engine skips to.
_COLON_FORM = ASSIGNMENTS[13]
_COLON_FORM_INSIDE = re.compile(_COLON_FORM.pattern.replace(r"(?:^|[(,;:]\s*)", r"[(,;:]\s*", 1))
_ASCII_COLON_FORM = ascii_twin(_COLON_FORM)
_ASCII_COLON_FORM_INSIDE = ascii_twin(_COLON_FORM_INSIDE)


def _colon_form_matches(clause: str, *, ascii: bool = False) -> Iterator[re.Match[str]]:
    """`_COLON_FORM.finditer(clause)`: its match at the start, then those of the form without "^" after it (as
    the ASCII twins when `ascii`: the clause is ASCII)."""
    form, inside = (_ASCII_COLON_FORM, _ASCII_COLON_FORM_INSIDE) if ascii else (_COLON_FORM, _COLON_FORM_INSIDE)
    first = form.match(clause)
    if first is not None:
        yield first
    yield from inside.finditer(clause, first.end() if first is not None else 1)


# Opens on the capital (which the engine skips to), then looks behind it: the same as (?<![\w-])[A-Z]{4,24}(?![\w-]).
_CAPS_WORD = re.compile(r"[A-Z](?<![\w-][A-Z])[A-Z]{3,23}(?![\w-])")


# A rule given as a rule: the clause opens with its rule word ("Never deploy on Fridays", "ann, don't push
# to main", "bitte niemals ...", "不要..."), after an addressee or a "please". "you should get a better
# adapter" or "it shouldn't require anything" advise or predict; they rank as mentions in a group.
_RULE_OPENING = re.compile(
    r"^(?:(?:please|pls|and|but|so|just|ok|okay|also|bitte|por favor|пожалуйста|s'il te plaît)[,]?\s+)*"
    r"(?:never|always|don'?t|do not|mustn'?t|must not|avoid|make sure|ensure|stop using|no longer|under no|"
    r"nie|niemals|immer|stets|keinesfalls|auf keinen fall|jamais|toujours|ne\b|n'|surtout|il faut|nunca|siempre|"
    r"jamás|no\s+\w+(?:es|as)\b|evita|hay que|никогда|всегда|нельзя|обязательно|永远|不要|必须|务必|一定要|禁止|请勿|别)",
    _I,
)


def opens_with_rule(text: str) -> bool:
    """Whether a clause is worded as a rule: it opens with the rule word (see `_RULE_OPENING`)."""
    addressee = (_ASCII_ADDRESSEE if text.isascii() else _ADDRESSEE).match(text)
    body = text[addressee.end():] if addressee is not None else text
    return _RULE_OPENING.match(body.lstrip("-*• ")) is not None


def may_answer(text: str) -> bool:
    """False when `text` is no bare answer to any question: empty, several lines, a question, or too many words.

    The part of `bare_answer` that does not depend on the question: a span asks it once per line before
    looking back for the question a line may answer.
    """
    body = text.strip()
    # At most one split more than the limit: a long line is not split whole.
    return bool(body) and "\n" not in body and not body.endswith("?") and len(body.split(None, MAX_ANSWER_WORDS)) <= MAX_ANSWER_WORDS


def bare_answer(text: str, question: str = "") -> str | None:
    """The exact token of a short reply that is just a value ("4471", "it's QX-77-B"), or None.

    By position, a capital-letter code is one too, and so is any word when the question asks for a
    password, code, pin... ("what's the wifi password?" - "swordfish").
    """
    if not may_answer(text):
        return None
    body = text.strip()
    nouns = [word for word in words_of(question.lower()) if word in VALUE_NOUNS] if question else []
    key = nouns[0] if nouns and len(body.split()) == 1 else ""
    tokens = [stated_value(word, key) for word in body.split()]
    found = [token for token in tokens if token is not None]
    return found[-1] if found else None


# A question that asks for a value: a wh-word of the ledger's languages, or a noun whose value is arbitrary
# ("anyone have the door code?"). "people do that?" or "can anybody use this app?" is answered by no value.
_VALUE_QUESTION = re.compile(
    r"\b(?:what|what's|whats|which|wat|was|welche[rsnm]?|wie|quel(?:le)?s?|qu'est|qué|que|cuál(?:es)?|cual|"
    r"какой|какая|какое|какие|что|сколько)\b|什么|多少|哪",
    _I,
)


# "what do you think?", "was meinst du?": asks for an opinion, whatever the reply looks like.
_OPINION = re.compile(
    r"\b(?:what|which)(?: do| did| would)? (?:you|u|y'all|people|others) (?:think|mean|say|suggest|recommend|prefer)"
    r"|\bwas (?:meinst|denkst|haltet|hältst)|qu'en penses|qu'en pensez|qué (?:opinas|piensas)|что (?:думаешь|скажешь)",
    _I,
)


_LOWERED_VALUE_QUESTION = lowered_twin(_VALUE_QUESTION) or _VALUE_QUESTION
_LOWERED_OPINION = lowered_twin(_OPINION) or _OPINION


@lru_cache(maxsize=QUESTION_CACHE_SIZE)  # each line is asked about by the next few answers of a span
def asks_value(text: str) -> bool:
    """A question whose answer may be a bare value (see `_VALUE_QUESTION`)."""
    if not is_question(text):
        return False
    lines = [line for line in text.splitlines() if line.strip()]
    last = lines[-1].lower() if lines else ""
    # Lower-cased already: over ASCII the case-sensitive twins (`lowered_twin`); the opinion scan only matters
    # for a line that would ask for a value.
    plain = last.isascii()
    if VALUE_NOUNS.isdisjoint(words_of(last)) and (_LOWERED_VALUE_QUESTION if plain else _VALUE_QUESTION).search(last) is None:
        return False
    return (_LOWERED_OPINION if plain else _OPINION).search(last) is None


def is_question(text: str) -> bool:
    """A line that asks something (its last non-empty line ends with a question mark)."""
    stripped = text.rstrip()
    return stripped.endswith(("?", "？"))
