"""English verb forms, for completeness's verb normalisation.

What completeness asks of a lexicon, for one lowercase word: its first verb lemma, whether it
is a past or present participle of one of its verb lemmas, and whether it reads only as a
verb. ``data/verb_forms.tsv`` holds those answers for every verb form lemminflect knows, taken
from lemminflect's own functions by ``scripts/build_verb_forms.py``: the same answers as
loading lemminflect, in ~8 MB instead of ~50 MB per process.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import NamedTuple


class VerbForm(NamedTuple):
    """What the lexicon says of one verb form."""

    lemma: str
    """The first of its verb lemmas (lemminflect's order)."""
    past_participle: bool
    """It is the VBN form of one of its verb lemmas."""
    present_participle: bool
    """It is the VBG form of one of its verb lemmas."""
    only_verb: bool
    """The lexicon has no reading of it but as a verb or an auxiliary."""


@cache
def _table() -> dict[str, VerbForm]:
    text = resources.files("tracescore.scorers").joinpath("data/verb_forms.tsv").read_text("utf-8")
    table: dict[str, VerbForm] = {}
    lemmas: dict[str, str] = {}  # one string object per lemma, shared by its forms
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        word, lemma, flags = line.split("\t")
        lemma = lemmas.setdefault(lemma, lemma)
        table[word] = VerbForm(lemma, "n" in flags, "g" in flags, "v" in flags)
    return table


def verb_form(word: str) -> VerbForm | None:
    """``word``'s verb reading (``word`` lowercase), or ``None`` when it has none."""
    return _table().get(word)
