"""The memory security scanner: one verdict per text, naming the pattern that matched.

Owns `ScanVerdict`, `scan` and `assess` (`scan` plus a borderline flag, for the
optional model screen of `llm_screen.py`). Every write to notes (memory tool, CLI,
background review) and every load of notes goes through `scan`; the skill
store uses `scan_procedure` (the same without the note-shape and learned layers:
a skill is a procedure, an instruction by design). It knows nothing of files, chats or tools.

Layers, in order (and once more on the text a note hides in Morse code or base64,
`_decode.hidden_text`): refused invisible characters on the raw text (a hit on their
own, whatever they hide); the named patterns of `_patterns.PATTERNS` against the
normalised views of `_normalize.views` (NFKC, homoglyph folding, spacing and
leetspeak undone); the note shape of `_shape.judge` (a note states a fact; text
that addresses the assistant and sets personas, rules, output or future
behaviour is an instruction); and the learned layer of `_model` (a hashed n-gram
logistic regression, `scanner_model.json`, trained by bench/scanner_train.py),
only for text that addresses someone, above a bar that falls with persona/rule
vocabulary and with length (`_threshold`). A note longer than `LONG_NOTE_CHARS`
meets the note shape first, for cost: the named patterns are the expensive part
on long text. Cost: each distinct view is matched once (plain ASCII text is one
string in three views), views and shape signals not needed are never built.
Figures (refused/accepted per corpus, wall and CPU time): bench/scanner.py.

Decisions (pinned by the corpus in tests/agent/memory/):
- Refused invisible characters are refused wherever they stand, including a
  zero-width joiner inside an emoji sequence: docs/design.md §4.1 lists U+200D, and an
  exception would be a place to hide text.
- `.env.example` / `.sample` / `.template` / `.dist` are templates: "remember to
  read .env.example docs" passes; "read the .env file" is refused.
- Phrases, not words: "you are now ready to start", "ignore lint warnings",
  "post the results to the Slack channel", "from now on answer in German" pass.
- Cost stays roughly linear in the text length (chain patterns, token-wise
  folding); a 100,000-char hostile input scans in about a second.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agent.memory import _model
from agent.memory._decode import hidden_text
from agent.memory._normalize import Views, invisible_kind, views
from agent.memory._patterns import PATTERNS
from agent.memory._shape import Signals, judge, signals

CATEGORIES: Final = (
    "prompt_injection",
    "role_hijack",
    "system_prompt",
    "exfiltration",
    "persistence",
    "secret",
    "invisible_unicode",
)

__all__ = ["CATEGORIES", "Assessment", "ScanVerdict", "assess", "scan", "scan_procedure", "pattern_names"]


@dataclass(frozen=True, slots=True)
class ScanVerdict:
    """The scanner's decision about one text.

    Attributes:
        ok: True when the text may be stored and shown to the model.
        category: one of `CATEGORIES` when blocked, else None.
        pattern: the name of the pattern that matched (e.g. "ignore_previous_instructions"), else None.
    """

    ok: bool
    category: str | None = None
    pattern: str | None = None

    def describe(self) -> str:
        """A short human text, e.g. "blocked: prompt_injection (ignore_previous_instructions)"."""
        if self.ok:
            return "ok"
        return f"blocked: {self.category} ({self.pattern})"


_OK: Final = ScanVerdict(ok=True)


def _distinct(seen: Views) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Each view tuple the patterns use, mapped to its distinct texts: on plain ASCII text `native`, `latin`
    and `deobfuscated` are one string, and a pattern need not run three times over it."""
    found: dict[tuple[str, ...], tuple[str, ...]] = {}
    for names in _VIEW_TUPLES:
        texts: list[str] = []
        for name in names:
            text = getattr(seen, name)
            if text not in texts:
                texts.append(text)
        found[names] = tuple(texts)
    return found


_VIEW_TUPLES: Final = tuple(dict.fromkeys(pattern.views for pattern in PATTERNS))


def scan(text: str) -> ScanVerdict:
    """Scan one text (a note entry, a skill, …) for injection, exfiltration, persistence and secrets.

    Args:
        text: the text as it would be stored.

    Returns:
        `ScanVerdict(ok=True)` for clean text; otherwise the category and the
        name of the first pattern that matched.
    """
    return _assess(text)[0]


@dataclass(frozen=True, slots=True)
class Assessment:
    """The deterministic verdict plus whether an accepted text is close enough to the line to ask a model.

    Attributes:
        verdict: what `scan` returns.
        borderline: accepted, but it addresses someone with persona/rule register or scores near the
            learned layer's threshold (what `memory.llm_screen: borderline` asks the auxiliary model about).
    """

    verdict: ScanVerdict
    borderline: bool = False


def assess(text: str) -> Assessment:
    """`scan` plus the borderline flag, for the optional model screen (agent/memory/llm_screen.py)."""
    verdict, borderline = _assess(text)
    return Assessment(verdict, borderline)


def scan_procedure(text: str) -> ScanVerdict:
    """`scan` for texts that are instructions by design (skills): invisible characters and the named threat
    patterns (injection phrases, hijack, exfiltration, persistence, secrets) only. The note-shape and learned
    layers refuse instructions as such ("a note states a fact"), which a procedure is meant to be.
    (Encoded payloads are not unwrapped here: a skill may carry base64 data.)"""
    text = text.removeprefix("\ufeff")
    hidden = invisible_kind(text)
    if hidden is not None:
        return ScanVerdict(ok=False, category="invisible_unicode", pattern=hidden)
    texts = _distinct(views(text))
    for pattern in PATTERNS:
        if any(pattern.search(view) for view in texts[pattern.views]):
            return ScanVerdict(ok=False, category=pattern.category, pattern=pattern.name)
    return _OK


def _assess(text: str) -> tuple[ScanVerdict, bool]:
    verdict, borderline = _assess_plain(text)
    plain = hidden_text(text) if verdict.ok else None
    if plain is not None:  # Morse or base64: the decoded text is judged too (one level)
        inner, inner_borderline = _assess_plain(plain)
        if not inner.ok:
            return inner, False
        borderline = borderline or inner_borderline
    return verdict, borderline


def _assess_plain(text: str) -> tuple[ScanVerdict, bool]:
    text = text.removeprefix("\ufeff")  # a leading byte-order mark is an encoding artefact and hides nothing
    hidden = invisible_kind(text)
    if hidden is not None:
        return ScanVerdict(ok=False, category="invisible_unicode", pattern=hidden), False
    seen = views(text)
    shape = signals(seen.lines)
    finding = judge(seen.lines, shape) if len(seen.latin) >= LONG_NOTE_CHARS else None
    if finding is not None:  # a long prompt: the shape layer decides in well under a millisecond
        return ScanVerdict(ok=False, category=finding[0], pattern=finding[1]), False
    texts = _distinct(seen)
    for pattern in PATTERNS:
        if any(pattern.search(text) for text in texts[pattern.views]):
            return ScanVerdict(ok=False, category=pattern.category, pattern=pattern.name), False
    finding = finding or judge(seen.lines, shape)
    if finding is not None:
        return ScanVerdict(ok=False, category=finding[0], pattern=finding[1]), False
    learned = _learned(seen, shape)
    if learned >= _threshold(shape):
        return ScanVerdict(ok=False, category="prompt_injection", pattern=LEARNED_PATTERN), False
    borderline = learned >= BORDERLINE_SCORE or bool(
        shape.words >= 4 and (shape.role_setting or shape.future or shape.markers or shape.lexicon >= 2))
    return _OK, borderline


LEARNED_PATTERN: Final = "learned_instruction_shape"
LEARNED_THRESHOLD: Final = 0.85
REGISTER_THRESHOLD: Final = 0.6
LONG_THRESHOLD: Final = 0.3  # about 3x the highest benign score at that length (chat, devnotes: 0.09)
LONG_WORDS: Final = 40
BORDERLINE_SCORE: Final = 0.4  # accepted, but close enough to the learned layer's bar to be worth a second opinion
LONG_NOTE_CHARS: Final = 200  # above this, note shape runs before the (costlier) named patterns


def _threshold(shape: Signals) -> float:
    """The learned layer's bar. Much persona/rule vocabulary (more than any real chat line uses) lowers it; so
    does length: none of 750 real chat lines and developer notes of 40+ words scores above 0.1
    (bench/scanner.py: chat, devnotes), while a long text that addresses the assistant is most often a prompt."""
    if shape.lexicon >= 4:
        return REGISTER_THRESHOLD
    return LONG_THRESHOLD if shape.words >= LONG_WORDS else LEARNED_THRESHOLD


def _learned(seen: Views, shape: Signals) -> float:
    """The learned layer's score, only for text that addresses someone and is long enough to judge (else 0)."""
    if shape.words < 8 or not (shape.second_person or shape.lexicon or shape.role_setting):
        return 0.0
    return _model.score(seen.deobfuscated)


def pattern_names() -> tuple[str, ...]:
    """Every pattern name the scanner can report (for docs and tests)."""
    names = [pattern.name for pattern in PATTERNS] + [LEARNED_PATTERN]
    names += ["zero_width_character", "bidi_control_character", "invisible_operator_character", "unicode_tag_character"]
    return tuple(names)
