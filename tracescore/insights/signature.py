"""A failed run's signature: how it failed, apart from how it was worded.

Runs of one failure mode are written differently every time (other requests, entities,
languages, error texts), so grouping by their words splits a mode by its wording. What stays
the same is what failed: the scorers that flagged the run and their labels, the
``consistency`` checks that failed, the tools whose calls failed and the class of their error,
and a few facts about the answer (in another language than the request, a refusal, an apology,
a verbatim run of the system prompt, an identifier found nowhere in the run). Those are the
signature's features; the grouping weighs them above the run's masked text.

Every feature comes from what any service stores: score rows (scorer, label, the
``consistency`` scorer's ``checks`` step), the spans' request, answer, system prompt and tool
calls. None needs a particular scorer: with the ``consistency`` scorer configured its checks
add to the features, without it the answer's own facts and the tool errors still tell the
modes apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from tracescore.insights.stop_words import ENGLISH_STOP_WORDS
from tracescore.language import detect_language, identifiable
from tracescore.scorers.code.consistency.answer_checks import repeated_run

# Masks, most specific first: what varies from run to run within a mode. Each with a pattern
# its matches need (None: a digit), searched first, so a text without it skips the mask: most
# texts hold no "@", "://", top-level domain or digit, and a literal is found faster than the
# mask's own pattern, which tries each word of the text.
_TLD = r"(?:com|net|org|io|internal|local|prod|svc|dev)\b"
_MASKS = (
    (re.compile("@"), re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), " <email> "),
    (re.compile("://"), re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE), " <url> "),
    (re.compile(r"\d\.\d"), re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), " <host> "),
    (re.compile(r"\." + _TLD, re.I), re.compile(r"\b(?:[a-z0-9-]+\.)+" + _TLD + r"(?::\d+)?", re.I), " <host> "),
    (None, re.compile(r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b", re.I), " <id> "),
    (None, re.compile(r"\b[0-9a-f]{16,}\b", re.I), " <id> "),
    (None, re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|minutes?|min|h|hours?)\b", re.I), " <duration> "),
    (None, re.compile(r"[$€£]\s?\d[\d,.]*\d|[$€£]\s?\d"), " <number> "),
    (None, re.compile(r"#?\b[A-Za-z]{0,4}[-/#]?\d[\w/-]*\d\w*\b|#\d+\b"), " <id> "),
    (None, re.compile(r"\b\d[\d,.]*\b"), " <number> "),
)  # fmt: skip
_DIGIT = re.compile(r"\d")
_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+(?: [A-Z][a-z]+)*")
"""A capitalised word inside a sentence: a person's, a place's or a product's name."""
_IDENTIFIER = re.compile(r"#?\b[A-Za-z]{0,4}[-/#]?\d{5,}(?:-[A-Za-z0-9]+)?\b")
"""An identifier-like value (an order, ticket or tracking number): five digits or more."""
_FIVE_DIGITS = re.compile(r"\d{5}")
"""What every :data:`_IDENTIFIER` holds, searched first: most answers hold none, and a run of
digits is found in a third of the time the identifier's pattern takes to try every word."""
_WORDS = re.compile(r"\w+")
_LETTERS = re.compile(r"[^\W\d_]+")

REFUSAL = re.compile(
    r"\b(?:can ?not|can't|can’t|cannot|unable to|not able to|won't be able|will not|"
    r"not (?:possible|eligible|allowed|permitted|available)|aren't possible|isn't possible|"
    r"(?:am|'m) afraid|regrettably|must decline|no longer (?:eligible|possible)|"
    r"doesn't allow|does not allow|don't allow|only (?:possible|available|eligible)|"
    r"outside (?:the|our) \w+ (?:window|period)|(?:is|was|has been) (?:denied|declined)|"
    r"can(?:no|')t be (?:refunded|processed|approved|issued))\b",
    re.IGNORECASE,
)
QUOTES_INSTRUCTIONS = re.compile(
    r"\b(?:my|the) (?:system prompt|(?:initial |internal )?instructions|guidelines|configuration)"
    r"\b|\bI (?:was|am) (?:told|instructed)\b|^\W*(?:\w+\W+){0,8}you are (?:\w+, )?(?:a|an|the)\b",
    re.IGNORECASE,
)
"""An answer that speaks of its own instructions: a leak's mark where the system prompt
itself is not in the spans to compare with."""
APOLOGY = re.compile(
    r"\b(?:sorry|apolog\w*|try again|retry|later|at the moment|right now|not responding|"
    r"temporarily|unavailable|trouble)\b",
    re.IGNORECASE,
)

ERROR_CLASSES = (
    ("timeout", re.compile(r"time[d -]?\s?out|deadline|took too long", re.I)),
    ("rate_limited", re.compile(r"rate.?limit|too many requests|\b429\b|quota", re.I)),
    ("unauthorized", re.compile(r"unauthori[sz]ed|forbidden|\b40[13]\b|permission|api key", re.I)),
    ("not_found", re.compile(r"not found|\b404\b|no such|does not exist", re.I)),
    ("connection", re.compile(r"connect|refused|unreachable|reset by peer|dns|resolve", re.I)),
    ("server_error", re.compile(r"\b50[0-3]\b|internal server error|bad gateway", re.I)),
    ("invalid", re.compile(r"invalid|validation|malformed|\b400\b|bad request|schema", re.I)),
)
"""Error classes a failed tool call's message is sorted into, first match wins (a 504
Gateway Time-out is a timeout, not a server error)."""

LEAK_WORDS = 8
"""Words of the system prompt an answer must repeat in a row to be flagged a leak (fewer than
the ``consistency`` scorer's default: here it only sets a run apart, it fails nothing)."""

PLAIN_WORDS = 5
PLAIN_SHARE = 0.25
"""A text of at least :data:`PLAIN_WORDS` words, this share of them English function words
("the", "you", "is"…), is English without asking the identifier: other languages' texts
share at most a fifth of their words with that list (at most 0.143 over the support
streams' 5,126 distinct requests and answers, tuning and held-out, that the identifier
reads as another language; English texts of jargon, names and ids fall between 0.25 and
0.3)."""
LANGUAGE_CONFIDENCE = 0.7
"""Least confidence of an identification the signature takes (chosen on the tuning stream:
short answers in another language score 0.7–0.9, English questions misread as another
language below 0.65)."""
LANGUAGE_CHARS = 400
"""Characters of a text its language is told from (identification time grows with length)."""
MASKED_CACHE = 4_096
"""Texts whose masked form is remembered (at most 1,000 characters each: a few MB)."""
FACTS_CACHE = 1_024
"""Distinct sets of a run's signals whose facts are remembered (a few dozen in practice)."""
LANGUAGE_CACHE = 4_096
"""Texts whose language is remembered (at most :data:`LANGUAGE_CHARS` characters each)."""
ANSWER_CACHE = 4_096
"""Answers whose facts are remembered (the runs hold the same strings: little memory)."""
UNKNOWN = "?"
ASKED = "asked:"
ANSWERED = "answered:"
FACTS = "facts:"
CONSISTENCY = "consistency"
CHECKS_STEP = "checks"
BINDING_LABELS = frozenset({"pass", "fail", "ok"})
"""Labels that say nothing a failing score does not: a binding's threshold's, a scorer's own
``ok``."""


def masked(text: str) -> str:
    """``text`` with what varies within a failure mode masked: addresses, hosts, ids,
    durations, numbers and names inside sentences."""
    digits = _DIGIT.search(text) is not None  # masks only take digits away: stays true
    for needs, pattern, mask in _MASKS:
        if digits if needs is None else needs.search(text):
            text = pattern.sub(mask, text)
    return _NAME.sub("<name>", text)


@lru_cache(maxsize=MASKED_CACHE)
def masked_part(text: str) -> str:
    """:func:`masked`, remembered: a run's parts (its answer, each failed tool's error, each
    reason) are masked one by one, and agents, tools and scorers repeat theirs word for word
    (templated apologies, one error text per outage, a judge's stock reasons)."""
    return masked(text)


def error_class(message: str) -> str:
    """The class of a tool's error message (``timeout``, ``not_found``…), ``other`` else."""
    return next((name for name, pattern in ERROR_CLASSES if pattern.search(message)), "other")


def leaks(answer: str, system: str) -> bool:
    """Whether ``answer`` repeats the system prompt verbatim (:data:`LEAK_WORDS` words in a
    row), found as the ``consistency`` scorer's ``leak`` check finds it."""
    return repeated_run(answer, system, LEAK_WORDS) is not None


def unsupported_identifiers(answer: str, evidence: Iterable[str]) -> list[str]:
    """Identifier-like values of ``answer`` found nowhere in ``evidence`` (the request, the
    system prompt, the tool calls' arguments and results)."""
    values = _IDENTIFIER.findall(answer) if _FIVE_DIGITS.search(answer) else []
    if not values:
        return []  # ``evidence`` left unread: rendering tool results is most of the cost
    seen = " ".join(evidence)
    return [value for value in values if value.lstrip("#") not in seen]


def identifier_noun(answer: str) -> str | None:
    """The word before the answer's first identifier (``order`` in "order BC-123456")."""
    found = _IDENTIFIER.search(answer)
    if found is None:
        return None
    before = _WORDS.findall(answer[: found.start()].lower())
    return before[-1] if before and not before[-1].isdigit() else None


def failed_checks(steps: Mapping[str, Any] | None) -> list[str]:
    """The failed checks of a ``consistency`` score's ``checks`` step (see its contract)."""
    if not steps:
        return []
    for step in steps.get("steps") or ():
        if isinstance(step, Mapping) and CHECKS_STEP in (step.get("name"), step.get("id")):
            result = step.get("result")
            if isinstance(result, Mapping):
                return [
                    str(name)
                    for name, outcome in result.items()
                    if isinstance(outcome, Mapping) and outcome.get("passed") is False
                ]
    return []


WEIGHTS = {
    "scorer": 0.15,
    "label": 0.7,
    "check": 1.0,
    "tool_error": 1.0,
    "tool_failed": 0.5,
    "answer": 1.0,
    "languages": 0.05,
}
"""Weight of each kind of feature (a feature is ``<kind>:<value>``). What failed counts
fully; which scorer noticed it and which tool it was count half, since several scorers notice
one mode and one mode can hit several tools. ``languages`` (``es<en``: answered in Spanish to
English) is there to name a group, barely weighed: grouping by it would split one mode by
language."""
FACT_WEIGHTS = {"refusal": 0.7, "apology": 0.3}
"""Answer facts that many failures share in passing (an apology beside a real answer)."""


def language_signals(request: str, answer: str) -> list[str]:
    """``asked:<code>`` and ``answered:<code>``: the languages of the request and the answer
    (``?`` where not identified), read once, when the run is rebuilt, and kept with its text."""
    asked = _language(request[:LANGUAGE_CHARS]) if request else None
    answered = _language(answer[:LANGUAGE_CHARS]) if answer else None
    return [f"{ASKED}{asked or UNKNOWN}", f"{ANSWERED}{answered or UNKNOWN}"]


def needs_identifier(text: str) -> bool:
    """Whether :func:`language_signals` will ask the identifier's model about ``text``: it is
    long enough to tell and not plainly English. A pass that meets such a text has the model
    loaded meanwhile (:func:`tracescore.language.load_in_background`)."""
    part = text[:LANGUAGE_CHARS]
    return identifiable(part) and not _plainly_english(part)


def _plainly_english(text: str) -> bool:
    words = _LETTERS.findall(text.lower())
    return (
        len(words) >= PLAIN_WORDS
        and sum(map(ENGLISH_STOP_WORDS.__contains__, words)) >= len(words) * PLAIN_SHARE
    )


@lru_cache(maxsize=LANGUAGE_CACHE)
def _language(text: str) -> str | None:
    """``text``'s language: English at once for a text of plain English function words (most
    runs, where identification would cost most of a rebuild's extra time), else identified;
    remembered, since agents repeat their templated answers (apologies, refusals) word for
    word."""
    return "en" if _plainly_english(text) else detect_language(text, LANGUAGE_CONFIDENCE)


ANSWER_SAYS = (
    ("refusal", REFUSAL),
    ("apology", APOLOGY),
    ("quotes_instructions", QUOTES_INSTRUCTIONS),
)
"""What an answer is checked for (``empty`` besides): patterns over its words that cost more
than the rest of a run's signature, so read once, when the run is rebuilt."""


@lru_cache(maxsize=ANSWER_CACHE)
def answer_signal(answer: str) -> str:
    """What the answer says (``facts:refusal+apology``, ``facts:`` for none), read once when
    its run is rebuilt and kept with its text beside its languages (:func:`language_signals`),
    so the next passes match no pattern and identify no language again; remembered, since
    agents repeat their templated answers word for word."""
    return FACTS + "+".join(_said(answer))


def _said(answer: str) -> list[str]:
    if not answer.strip():
        return ["empty"]
    return [fact for fact, pattern in ANSWER_SAYS if pattern.search(answer)]


def answer_facts(request: str, answer: str, signals: Sequence[str]) -> dict[str, str]:
    """Facts of the answer (fact -> detail): another language than the request's, refusal,
    apology, empty, and the trace-derived ``signals`` read when the run was rebuilt (the
    languages and facts of :func:`language_signals` and :func:`answer_signal` read here when
    they are not among them: a run stored before they were kept)."""
    facts = _facts(tuple(signals))
    if facts is None:  # a run stored before its languages and facts were kept with it
        if not any(signal.startswith((ASKED, ANSWERED)) for signal in signals):
            signals = [*signals, *language_signals(request, answer)]
        if not any(signal.startswith(FACTS) for signal in signals):
            signals = [*signals, answer_signal(answer)]
        facts = _facts(tuple(signals)) or {}
    return dict(facts)


@lru_cache(maxsize=FACTS_CACHE)
def _facts(signals: tuple[str, ...]) -> dict[str, str] | None:
    """:func:`answer_facts` of ``signals`` (None when they lack the languages or the facts),
    remembered: runs of one mode carry the same few (``asked:en``, ``answered:es``,
    ``facts:apology``), and a pass reads them for every run it groups. Callers copy the dict
    they get."""
    if not any(signal.startswith(FACTS) for signal in signals) or not any(
        signal.startswith((ASKED, ANSWERED)) for signal in signals
    ):
        return None
    facts: dict[str, str] = {}
    languages: dict[str, str] = {}
    for signal in signals:
        kind, _, value = signal.partition(":")
        if signal.startswith(FACTS):
            facts.update(dict.fromkeys(filter(None, value.split("+")), ""))
        elif signal.startswith((ASKED, ANSWERED)):
            languages[kind] = value
        else:
            facts[signal] = ""
    if "empty" in facts:
        return facts
    asked, answered = languages.get(ASKED[:-1]), languages.get(ANSWERED[:-1])
    if asked and answered and UNKNOWN not in (asked, answered) and asked != answered:
        facts["language_mismatch"] = f"{answered}<{asked}"
    return facts


def signature_features(
    flagged_by: Iterable[str],
    labels: Iterable[str],
    checks: Iterable[str],
    tools: Iterable[str],
    request: str,
    answer: str,
    signals: Sequence[str],
) -> dict[str, float]:
    """A run's signature as weighted features ``<kind>:<value>`` (see :data:`WEIGHTS`)."""
    features = {f"scorer:{name}": WEIGHTS["scorer"] for name in flagged_by}
    features.update((f"label:{label}", WEIGHTS["label"]) for label in labels)
    features.update((f"check:{check}", WEIGHTS["check"]) for check in checks)
    for line in tools:
        name, failed, message = line.partition(" failed: ")
        if failed:
            features[f"tool_error:{error_class(message)}"] = WEIGHTS["tool_error"]
            features[f"tool_failed:{name}"] = WEIGHTS["tool_failed"]
    for fact, detail in answer_facts(request, answer, signals).items():
        features[f"answer:{fact}"] = FACT_WEIGHTS.get(fact, WEIGHTS["answer"])
        if detail:
            features[f"languages:{detail}"] = WEIGHTS["languages"]
    return features
