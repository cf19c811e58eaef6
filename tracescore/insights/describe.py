"""A group's name and description from its signature: what failed, in words a reader knows
("get_weather timed out, answer apologised", "answered in Spanish to an English question").

The signature's shares (:attr:`Group.signature`) say what most of a group's runs have in
common; the first rule below that most of them meet names the group, in order of how much a
feature says about the failure: a leaked prompt or a failed tool call explain a run, a refusal
or an apology only describe its answer. A group no rule fits is named by its failed checks or
scorers and its distinctive terms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from tracescore.insights.signature import identifier_noun

MOST = 0.5
"""Share of a group's runs a feature needs to name the group."""
ALSO = 0.25
"""Share at which a second tool, language or check is named beside the first."""

LANGUAGES = {
    "en": "English", "es": "Spanish", "fr": "French", "de": "German", "it": "Italian",
    "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "ru": "Russian", "ja": "Japanese",
    "zh": "Chinese", "ko": "Korean", "ar": "Arabic", "tr": "Turkish", "sv": "Swedish",
    "da": "Danish", "no": "Norwegian", "fi": "Finnish", "cs": "Czech", "hi": "Hindi",
    "uk": "Ukrainian", "el": "Greek", "ro": "Romanian", "hu": "Hungarian", "ca": "Catalan",
}  # fmt: skip
ERRORS = {
    "timeout": "timed out",
    "rate_limited": "was rate-limited",
    "unauthorized": "was refused access",
    "not_found": "found nothing",
    "connection": "could not connect",
    "server_error": "failed with a server error",
    "invalid": "rejected its arguments",
    "other": "failed",
}
CHECKS = {
    "grounding": "states values found nowhere in the run",
    "contradiction": "contradicts its tool results",
    "entities": "mixes up the entity asked about",
    "non_answer": "does not answer",
    "truncation": "is cut off",
    "language": "is in another language than the question",
    "leak": "repeats the system prompt",
}


def _language(code: str) -> str:
    return LANGUAGES.get(code, code)


def _with(signature: Mapping[str, float], kind: str, least: float) -> list[str]:
    """The values of ``kind`` features held by at least ``least`` of the runs, commonest first."""
    prefix = f"{kind}:"
    found = [(share, f[len(prefix) :]) for f, share in signature.items() if f.startswith(prefix)]
    return [value for share, value in sorted(found, key=lambda x: -x[0]) if share >= least]


def _answer_did(signature: Mapping[str, float]) -> str:
    if signature.get("answer:apology", 0) >= MOST:
        return ", answer apologised"
    if signature.get("answer:refusal", 0) >= MOST:
        return ", answer refused"
    if signature.get("answer:unsupported_id", 0) >= MOST:
        return ", answer invented values"
    return ""


def _languages_name(signature: Mapping[str, float]) -> str:
    """``answered in Spanish to an English question`` when most runs are that pair, else the
    languages the answers came in."""
    pairs = [pair.split("<") for pair in _with(signature, "languages", 0.0)]
    top = _with(signature, "languages", MOST)
    if top:
        answered, asked = (_language(code) for code in top[0].split("<"))
        article = "an" if asked[0] in "AEIOU" else "a"
        return f"answered in {answered} to {article} {asked} question"
    answered_in = list(dict.fromkeys(_language(a) for a, _ in pairs))
    listed = f" ({', '.join(answered_in[:3])}…)" if answered_in else ""
    return f"answered in another language than the question's{listed}"


def signature_name(
    signature: Mapping[str, float], answers: Sequence[str], distinctive: Sequence[str]
) -> str:
    """The group's name from its signature (``answers``: a few of its runs' answers)."""
    failed_tools = _with(signature, "tool_failed", ALSO)
    errors = _with(signature, "tool_error", MOST)
    if signature.get("answer:leak", 0) >= MOST or signature.get("check:leak", 0) >= MOST:
        return "answer leaked the system prompt"
    if signature.get("answer:quotes_instructions", 0) >= MOST and not errors:
        return "answer quoted its own instructions (a prompt leak?)"
    if errors and failed_tools:
        return f"{', '.join(failed_tools[:2])} {ERRORS.get(errors[0], 'failed')}{_answer_did(signature)}"
    if (
        signature.get("answer:language_mismatch", 0) >= MOST
        or signature.get("check:language", 0) >= MOST
    ):
        return _languages_name(signature)
    if (
        signature.get("answer:unsupported_id", 0) >= MOST
        or signature.get("check:grounding", 0) >= MOST
    ):
        nouns = Counter(noun for answer in answers if (noun := identifier_noun(answer)))
        what = f"{nouns.most_common(1)[0][0]} numbers" if nouns else "values"
        return f"invented {what} found nowhere in the run"
    if signature.get("answer:refusal", 0) >= MOST or signature.get("check:non_answer", 0) >= MOST:
        topic = f": {' · '.join(distinctive[:2])}" if distinctive else ""
        return f"refused the request{topic}"
    if signature.get("answer:empty", 0) >= MOST:
        return "empty answer"
    checks = _with(signature, "check", MOST)
    if checks:
        return "answer " + " and ".join(CHECKS.get(check, check) for check in checks[:2])
    scorers = _with(signature, "scorer", MOST)
    terms = " · ".join(distinctive[:3])
    if scorers:
        return f"failed {', '.join(scorers[:2])}" + (f": {terms}" if terms else "")
    return terms or "failed runs"


def signature_description(signature: Mapping[str, float], size: int) -> str:
    """One sentence of what the group's runs share, with shares."""
    parts = [f"{round(share * 100)}% {feature}" for feature, share in signature.items()]
    return f"{size} failed runs; signature: {', '.join(parts[:8]) or 'none in common'}"
