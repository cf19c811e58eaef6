"""The checks of the answer as an answer: whether it answers at all (``non_answer``), whether it
was cut off (``truncation``), whether it is in the user's language (``language``) and whether
it repeats the system prompt (``leak``).

Each returns its findings (none: passed). They read wording, so they know phrasings, not
intent: a refusal worded unlike any they know passes, and a quoted instruction that the user
was meant to see is a leak all the same.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tracescore.language import detect_language
from tracescore.scorers.code.consistency.evidence import Evidence

REFUSAL = re.compile(
    # every wording starts with one of these letters: most positions fail there, at once
    r"(?=[icnwuaj])(?:"
    r"\b(?:i(?:'|’)?m|i am)\s+(?:sorry,?\s+(?:but\s+)?|afraid\s+)?(?:not\s+able|unable)\s+to\s+"
    r"(?:help|assist|provide|answer|do\s+that|share|look\s+into|support)"
    r"|\bi\s+(?:can(?:'|’)?t|cannot|can\s+not|won(?:'|’)?t|am\s+not\s+allowed\s+to|(?:'|’)m\s+not\s+allowed\s+to)\s+"
    r"(?:help|assist|provide|answer|do\s+that|share|discuss|comply|look\s+into|support|give)"
    r"|\b(?:can(?:'|’)?t|cannot|not\s+able\s+to)\s+help\s+(?:you\s+)?with"
    r"|\b(?:won(?:'|’)?t|will\s+not)\s+be\s+able\s+to\s+(?:help|assist|provide|answer|look|share|do|give)"
    r"|\bas\s+an\s+ai\b|\bi\s+(?:don(?:'|’)?t|do\s+not)\s+have\s+(?:access|the\s+ability)"
    r"|\bi\s+(?:must|have\s+to|need\s+to)\s+decline|\bunable\s+to\s+(?:help|assist)\s+with"
    r"|\bno\s+puedo\s+(?:ayudar|responder|proporcionar)|\bje\s+ne\s+(?:peux|suis)\s+pas\s+(?:en\s+mesure\s+)?(?:d'|de\s+)?(?:aider|répondre|vous\s+aider)"
    r"|\bich\s+kann\s+(?:dir|ihnen)\s+(?:dabei\s+|damit\s+)?nicht\s+helfen"
    r"|\bnon\s+posso\s+(?:aiutar|rispondere)|\bnão\s+posso\s+(?:ajudar|responder))",
    re.IGNORECASE,
)
SCOPE = re.compile(
    r"\bonly\s+(?:help|assist|answer|handle|support|talk)|\boutside\s+(?:of\s+)?(?:my|the|our)\s+(?:scope|area)"
    r"|\bnot\s+(?:something|a\s+topic)\s+i\s+(?:can|cover)|\bspeciali[sz]ed\s+in|\bi\s+can\s+help\s+(?:you\s+)?with\s+\w+"
    r"|\bsolo\s+puedo|\bje\s+peux\s+seulement|\bnur\s+bei",
    re.IGNORECASE,
)
"""A refusal that says what the agent does instead: a decline of a request outside its job."""
ACKNOWLEDGED = re.compile(
    r"unavailab|unreachab|not\s+(?:available|reachable|responding|working|load)|could(?:n(?:'|’)?t|\s+not)"
    r"|can(?:'|’)?t\s+(?:reach|access|get|retrieve|fetch|load|connect|look)|cannot\s+(?:reach|access|get|retrieve|fetch|load|connect|look)"
    r"|unable|\berror|\bfail|\bdown\b|time[ds]?\s?out|try\s+again|problem|issue|outage|no\s+(?:response|data|results?)"
    r"|(?:is|are)n(?:'|’)?t\s+(?:responding|working|available)|trouble|temporar|did\s+not\s+(?:respond|return|work)"
    r"|didn(?:'|’)?t\s+(?:respond|return|work)|no\s+disponible|no\s+responde|indisponible|nicht\s+(?:erreichbar|verfügbar)"
    r"|erreur|fehler|errore|non\s+disponibile|indisponível|sorry|désolé|lo\s+siento|leider|sfortunatamente",
    re.IGNORECASE,
)
"""Words an answer uses to say that something it needed failed."""
LENGTH_REASONS = frozenset(
    {"length", "max_tokens", "max_output_tokens", "model_length", "token_limit"}
)
_LIST_LINE = re.compile(r"^\s*(?:[-*•+]|\d+[.)]|\|)")
_DANGLING = frozenset(
    "the a an and or but of to with for in on at by from your our my is are was were be that "
    "which who this these its their as than then so if because le la les de des et ou el los "
    "las y del der die das und oder mit".split()
)
_WORD = re.compile(r"[^\W\d_]{4,}")
_WORDS = re.compile(r"[^\W\d_]{2,}")
_STOP_KEYS = frozenset(
    "what when where which would could should there their about have with this that from your "
    "please thanks thank hello help need want know tell like just right also does more some "
    "they them then than into only will here been were very much".split()
)
CLOSE_LANGUAGES = ({"no", "nb", "nn", "da"}, {"hr", "sr", "bs"}, {"id", "ms"}, {"es", "gl", "ca"})
"""Languages the identifier confuses on short texts: one of a group is taken for another."""
_ANSWER_IN = re.compile(
    r"\b(?:answer|respond|reply|write|speak)(?:\s+\w+){0,3}?\s+in\s+(english|spanish|french|german|italian|portuguese|dutch|japanese|chinese)\b",
    re.IGNORECASE,
)
_LANGUAGE_CODES = {
    "english": "en",
    "spanish": "es",
    "french": "fr",
    "german": "de",
    "italian": "it",
    "portuguese": "pt",
    "dutch": "nl",
    "japanese": "ja",
    "chinese": "zh",
}


def non_answer(evidence: Evidence) -> list[str]:
    """An empty answer, a refusal the evidence does not warrant, a failed tool call answered as
    if it had worked, or an answer sharing nothing with the question or the tool results."""
    answer = evidence.answer.strip()
    if not any(char.isalnum() for char in answer):
        return ["the answer is empty"]
    failed = evidence.failed_calls
    acknowledged = bool(failed) and bool(ACKNOWLEDGED.search(answer))
    if refusal := REFUSAL.search(answer):
        if failed:
            return []  # declining because a tool failed is the honest answer
        if not evidence.served and SCOPE.search(answer):
            return []  # a request outside the agent's job, declined with what it does instead
        served = " although its tools answered" if evidence.served else ""
        return [f"the answer refuses ({refusal.group().strip()!r}){served}"]
    if failed and not acknowledged and not evidence.served:
        names = ", ".join(dict.fromkeys(call.name for call in failed))
        return [f"{names} failed but the answer does not say so"]
    if not acknowledged and _off_topic(evidence):
        return ["the answer shares no word or value with the question or the tool results"]
    return []


_STOP_STEMS = frozenset(word[:5] for word in _STOP_KEYS)
"""Stems a content word shares with a stop word (``pleasure`` and ``please``): no evidence."""


def _keys(text: str) -> set[str]:
    """Content words, cut to five letters (a stem in most European languages)."""
    return {word[:5] for word in _WORD.findall(text.lower())} - _STOP_STEMS


def _off_topic(evidence: Evidence) -> bool:
    """The answer shares no content word with the question, the tool calls and the context,
    where there is something to share: tools that answered, or a question of substance. Words
    are compared whole (as stems): ``light`` is not in ``flight_status``."""
    question = _keys(evidence.question)
    if not evidence.served and len(question) < 4:
        return False  # small talk and short requests: too little to compare
    answer = {word[:5] for word in evidence.answer_words if len(word) >= 4} - _STOP_STEMS
    if len(answer) < (1 if evidence.served else 3) or not answer.isdisjoint(question):
        return False
    source = _keys("\n".join([evidence.tool_text, *evidence.context]))
    return answer.isdisjoint(source) and not _shares_value(evidence)


_DIGIT_RUN = re.compile(r"\d+")


def _shares_value(evidence: Evidence) -> bool:
    numbers = set(_DIGIT_RUN.findall(evidence.answer))
    return bool(numbers & set(_DIGIT_RUN.findall(evidence.tool_text)))


def truncation(evidence: Evidence) -> list[str]:
    """Cut off: a length finish reason, an unfinished last sentence, or brackets, quotes or
    code fences left open."""
    findings = []
    reason = evidence.finish_reason
    if reason and reason.lower() in LENGTH_REASONS:
        findings.append(f"the model stopped at its length limit (finish reason {reason})")
    answer = evidence.answer.rstrip()
    if not answer:
        return findings
    last_line = answer.rsplit("\n", 1)[-1]
    words = answer.split()
    last = answer[-1]
    unfinished = last in ",:;(-–" or words[-1].lower() in _DANGLING or len(words) >= 5
    if unfinished and not _LIST_LINE.match(last_line) and not _ends_well(last):
        findings.append(f"the answer ends mid-sentence: …{answer[-40:]!r}")
    findings += _unclosed(answer)
    return findings


def _ends_well(char: str) -> bool:
    """A last character that ends a text: a full stop, a closing mark, an emoji or symbol."""
    return not (char.isalnum() or char in ",:;(-–")


_INCH = re.compile(r"\d\"")
"""A digit before a ``"`` (``27"``): a unit, not a quote left open."""


def _unclosed(answer: str) -> list[str]:
    found = []
    for opening, closing in (("(", ")"), ("[", "]"), ("{", "}"), ("“", "”"), ("«", "»")):
        if answer.count(opening) > answer.count(closing):
            found.append(f"{opening} opened and not closed")
    if answer.count("```") % 2:
        found.append("a code block opened and not closed")
    if answer.count('"') % 2 and not _INCH.search(answer):
        found.append('a " opened and not closed')
    if answer.count("**") % 2:
        found.append("a ** opened and not closed")
    return found


SAMPLE = 200
"""Characters of a text its language is told from: enough for the identifier, whose cost grows
with the text."""


_FUNCTION_WORDS = {
    language: frozenset(words.split())
    for language, words in {
        "en": "the is are and you your it what with for this that of to have can how my i me in on do at please where when any there",
        "es": "el la los las es y que de en por para con una un está hace qué cómo mi tu dónde hay",
        "fr": "le la les est et que de en pour avec une un il vous fait quel quelle ma mon votre où à",
        "de": "der die das ist und nicht ich sie mit für ein eine es wie was gerade mein in sind",
        "it": "il lo gli è e che di per con una un non sono come che",
        "pt": "o os as é e que de em para com uma um não está como qual",
    }.items()
}
"""A few of each common language's most frequent words, which no other of them uses alike."""
_LANGUAGES_OF: dict[str, tuple[str, ...]] = {
    word: tuple(language for language, words in _FUNCTION_WORDS.items() if word in words)
    for words in _FUNCTION_WORDS.values()
    for word in words
}
"""Each function word's languages (``de``: Spanish and French; ``in``: English and German)."""


def _votes(text: str) -> dict[str, int]:
    """How many of ``text``'s first words are each language's function words (a plain dict
    filled in one loop: a ``Counter`` and ``most_common`` cost twice as much on every run)."""
    counts: dict[str, int] = {}
    languages_of = _LANGUAGES_OF.get
    for word in text[:SAMPLE].lower().split():
        for language in languages_of(word) or languages_of(word.strip("¿?¡!.,:;'\"")) or ():
            counts[language] = counts.get(language, 0) + 1
    return counts


def _ranked(votes: dict[str, int]) -> tuple[str | None, int, int]:
    """The language with most votes, its count and the runner-up's count."""
    top: str | None = None
    count = runner_up = 0
    for language, votes_for in votes.items():
        if votes_for > count:
            top, count, runner_up = language, votes_for, count
        elif votes_for > runner_up:
            runner_up = votes_for
    return top, count, runner_up


def _vote(text: str) -> str | None:
    """The language whose function words ``text``'s first words hold most, when no other
    language's as many (None when none has any, or two tie)."""
    top, count, runner_up = _ranked(_votes(text))
    return top if count > runner_up else None


@lru_cache(maxsize=64)
def _language_asked(system: str) -> str | None:
    """The language a system prompt tells the agent to answer in (cached: runs share it)."""
    wanted = _ANSWER_IN.search(system)
    return _LANGUAGE_CODES[wanted.group(1).lower()] if wanted else None


def language(evidence: Evidence) -> list[str]:
    """The answer's language is the user's (or the one the system prompt asks for).

    Where the function words of the question and the answer agree on a language, that settles
    it; the identifier (tens of microseconds a text) reads the rest."""
    wanted = _language_asked(evidence.system)
    asked = None if wanted else _vote(evidence.question)
    voted = _vote(evidence.answer) if asked is not None else None
    if asked is not None and (
        voted == asked or (voted is None and len(_WORDS.findall(evidence.answer, 0, SAMPLE)) < 6)
    ):
        return []  # the same language, or too few words to be another
    question = evidence.question[:SAMPLE]
    request = evidence.request_text[-SAMPLE:]
    expected = (
        wanted
        or asked
        or detect_language(question)
        # the same text again (a request of one message) tells nothing new: not identified twice
        or (detect_language(request) if request != question else None)
    )
    if expected is None:
        return []
    said = detect_language(evidence.answer[:SAMPLE]) or _voted_clearly(evidence.answer, expected)
    if (
        said is None
        or said == expected
        or any({said, expected} <= group for group in CLOSE_LANGUAGES)
    ):
        return []
    whose = "the system prompt asks for" if wanted else "the user wrote"
    return [f"the answer is in {said}, {whose} {expected}"]


def _voted_clearly(answer: str, expected: str) -> str | None:
    """The answer's language by its function words alone, where the identifier was unsure (a
    short answer, mostly numbers and names: ``Tienes 2.318,07 € en tu cuenta corriente.``):
    only when two or more of them are another language's and none is the expected one's."""
    votes = _votes(answer)
    if votes.get(expected):
        return None
    top, count, runner_up = _ranked(votes)
    return top if count >= 2 and count > runner_up else None


_TOKENS = re.compile(r"\w+")
LEAK_WORDS = 12
"""Words of the system prompt an answer may repeat in a row before it is a leak."""


@lru_cache(maxsize=64)
def _prompt_words(system: str, size: int) -> tuple[str, frozenset[str]]:
    """A system prompt's words, joined by spaces, and every run of ``size // 2`` of them (cached:
    many runs share one prompt)."""
    words = _TOKENS.findall(system.lower())
    half = max(1, size // 2)
    runs = frozenset(" ".join(words[i : i + half]) for i in range(len(words) - half + 1))
    return f" {' '.join(words)} ", runs


def leak(evidence: Evidence, size: int = LEAK_WORDS) -> list[str]:
    """The answer repeats ``size`` or more words of the system prompt in a row."""
    quoted = repeated_run(evidence.answer, evidence.system, size)
    if quoted is None:
        return []
    return [
        f"the answer repeats {len(quoted.split())} words of the system prompt: {quoted[:120]!r}"
    ]


def repeated_run(answer: str, system: str, size: int) -> str | None:
    """The first run of ``size`` or more words of ``system`` that ``answer`` repeats verbatim
    (case aside), extended as far as it goes; None when there is none. Shared with the failure
    modes' leak flag.

    Any such repeat holds a run of ``size // 2`` words starting at a multiple of ``size // 2``:
    those few runs are looked up first, and only a hit is extended word by word."""
    if not system:
        return None
    words = _TOKENS.findall(answer.lower())
    if len(words) < size:
        return None
    prompt, runs = _prompt_words(system, size)
    half = max(1, size // 2)
    for anchor in range(0, len(words) - half + 1, half):
        if " ".join(words[anchor : anchor + half]) not in runs:
            continue
        for start in range(max(0, anchor - half + 1), anchor + 1):
            end = start + size
            if end <= len(words) and f" {' '.join(words[start:end])} " in prompt:
                while end < len(words) and f" {' '.join(words[start : end + 1])} " in prompt:
                    end += 1
                return " ".join(words[start:end])
    return None
