"""Which language a text is written in, from py3langid's bundled model (nothing fetched).

Shared by the ``consistency`` scorer (answer in another language than the question) and the
failure modes (grouping by language). Short texts and unsure identifications give ``None``
rather than a guess: a wrong language is worse than none for both.
"""

from __future__ import annotations

import re
import threading
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

MIN_LETTERS = 12
"""Fewer letters than this say too little about a language (``OK``, ``Paris?``, ``42 €``)."""
_LETTERS = re.compile(r"[^\W\d_]")
MIN_CONFIDENCE = 0.9
"""The least normalised probability of the top language accepted as an identification."""


_loading = threading.Lock()
_starting = threading.Lock()
_background: threading.Thread | None = None


@cache
def _identifier() -> LanguageIdentifier:
    """The model, loaded once (about a second) by the first caller, the other threads waiting
    for it rather than each loading its own copy at once."""
    with _loading:
        return _loaded()


@cache
def _loaded() -> LanguageIdentifier:
    # Imported here: the model cache imports py3langid and numpy, which a process that never
    # identifies a language (the service's, which imports this module through the insights it
    # may never run) would load for nothing.
    from tracescore.language.model_cache import load_identifier

    return load_identifier()  # py3langid's model, its decompressed copy kept between processes


def load_in_background() -> None:
    """Start loading the model in a thread of its own, unless it is loaded or being loaded:
    for a caller that knows it will identify languages and has other work meanwhile (an
    insights pass rebuilding runs). Decompressing the model, most of its second, holds no
    interpreter lock, so on a second core it costs the caller no time; the first
    :func:`detect_language` waits for it (the lock of :func:`_identifier`)."""
    global _background
    with _starting:
        if (_background is not None and _background.is_alive()) or _loaded.cache_info().currsize:
            return
        _background = threading.Thread(target=_identifier, name="language-model", daemon=True)
        _background.start()


def identifiable(text: str) -> bool:
    """Whether ``text`` has letters enough to tell its language (:data:`MIN_LETTERS`)."""
    return len(_LETTERS.findall(text, 0, 4 * MIN_LETTERS)) >= MIN_LETTERS


def detect_language(text: str, min_confidence: float = MIN_CONFIDENCE) -> str | None:
    """The ISO 639-1 code of ``text``'s language, or None when it is too short or less sure
    than ``min_confidence`` (the failure modes accept less: a short answer in Portuguese is
    often 0.7 sure, and there one wrong language among a group's runs is outweighed)."""
    if not identifiable(text):
        return None
    language, confidence = _identifier().classify(text)
    return str(language) if confidence >= min_confidence else None


def release_model() -> None:
    """Free the model (some 70 MB) until the next call: for a process that has identified what
    it needed and goes on to other work (an insights pass, before grouping)."""
    with _loading:
        _loaded.cache_clear()
        _identifier.cache_clear()
