"""Write ``tracescore/scorers/data/verb_forms.tsv`` from lemminflect's lexicon.

The completeness scorer needs four facts about a lowercase word: its first verb lemma, whether
it is a past participle (VBN) of one of its verb lemmas, whether it is a present participle
(VBG), and whether the lexicon reads it only as a verb. lemminflect answers them from two
lookup tables that cost ~50 MB per process once loaded (plus numpy); these facts for the
~26k verb forms take ~8 MB. So they are computed once here, with lemminflect's own
functions, and shipped as package data; ``tests/scorers/test_verb_forms.py`` checks the file against
lemminflect for every word of its lexicon.

Run it (with ``pip install lemminflect``) when moving to a new lemminflect release:

    python scripts/build_verb_forms.py
"""

from __future__ import annotations

import re
from pathlib import Path

from lemminflect import __version__, getAllLemmas, getInflection
from lemminflect.core.Lemmatizer import Lemmatizer

OUTPUT = (
    Path(__file__).resolve().parent.parent / "tracescore" / "scorers" / "data" / "verb_forms.tsv"
)
WORD = re.compile(r"[a-z0-9]+")  # every word completeness looks up: lowercased [A-Za-z0-9] runs


def lexicon_words() -> list[str]:
    """Every word lemminflect's lemma lookup knows (its table and its overrides), sorted."""
    lemmatizer = Lemmatizer()
    return sorted(set(lemmatizer._getLemmaDict()) | set(lemmatizer._getOverridesDict()))


def verb_form_row(word: str) -> str | None:
    """``word``'s line of the table, or ``None`` when lemminflect has no verb reading for it."""
    readings = getAllLemmas(word)
    lemmas = readings.get("VERB")
    if not lemmas:
        return None
    flags = ""
    if any(word in (getInflection(lemma, "VBN") or ()) for lemma in lemmas):
        flags += "n"
    if any(word in (getInflection(lemma, "VBG") or ()) for lemma in lemmas):
        flags += "g"
    if not readings.keys() - {"VERB", "AUX"}:
        flags += "v"
    return f"{word}\t{lemmas[0]}\t{flags}"


def main() -> None:
    rows = [
        row for word in lexicon_words() if WORD.fullmatch(word) and (row := verb_form_row(word))
    ]
    header = (
        f"# Verb forms from lemminflect {__version__} (MIT; lexicon from the NIH SPECIALIST Lexicon and AGID).\n"
        "# Written by scripts/build_verb_forms.py. Columns: word, first verb lemma, flags\n"
        "# (n: past participle, g: present participle, v: no reading but verb or auxiliary).\n"
    )
    OUTPUT.write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    print(f"{len(rows)} verb forms written to {OUTPUT}")


if __name__ == "__main__":
    main()
