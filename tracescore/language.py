"""Which language a text is written in (shared by the ``consistency`` scorer and the insights
pass): py3langid's bundled model, loaded once, with normalised probabilities so an unsure
guess is told apart from a sure one."""

from __future__ import annotations

from functools import cache

from py3langid.langid import MODEL_FILE, LanguageIdentifier

MIN_LETTERS = 12
"""Fewer letters than this say too little to tell a language by (``ok``, ``Danke``)."""
MIN_PROBABILITY = 0.7
"""A guess less likely than this is no answer."""


@cache
def _identifier() -> LanguageIdentifier:
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code of ``text``'s language (``en``, ``es``), or None when the text is too
    short or the identification unsure."""
    if sum(map(str.isalpha, text)) < MIN_LETTERS:
        return None
    language, probability = _identifier().classify(text)
    return str(language) if probability >= MIN_PROBABILITY else None


def release_model() -> None:
    """Free the identifier's model (some 70 MB) until the next call: for a process that has
    identified what it needed and goes on to other work (an insights pass, before grouping)."""
    _identifier.cache_clear()
