"""The language model loaded in the background while a pass rebuilds runs: the first
identification waits for it, and a model released is loaded again; its decompressed copy
kept between processes (:mod:`tracescore.language.model_cache`) is the same model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zstandard
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

from tracescore import language
from tracescore.language import detect_language, load_in_background, release_model
from tracescore.language.model_cache import CACHE_ENV, cache_file, load_identifier


def test_the_model_loads_in_the_background_and_is_waited_for() -> None:
    release_model()
    load_in_background()
    load_in_background()  # already loading: no second thread
    assert language._background is not None
    loader = language._background
    assert detect_language("Wie ist das Wetter gerade in Berlin?") == "de"
    loader.join(timeout=30)
    assert language._loaded.cache_info().currsize == 1  # one model, however many asked
    load_in_background()  # loaded: nothing started
    assert language._background is loader
    release_model()
    assert language._loaded.cache_info().currsize == 0
    assert detect_language("Quel temps fait-il à Paris aujourd'hui ?") == "fr"


TEXTS = (
    "Claro, aquí tiene la respuesta que necesita sobre su consulta de hoy.",
    "Wie ist das Wetter gerade in Berlin?",
    "Quel temps fait-il à Paris aujourd'hui ?",
    "Your refund was approved and will reach your card within five days.",
)


def _classified(identifier: LanguageIdentifier) -> list[tuple[str, float]]:
    return [identifier.classify(text) for text in TEXTS]


def test_the_decompressed_model_is_kept_and_read_back_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    bundled = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    first = load_identifier()  # decompresses the bundled model and keeps it
    kept = list(tmp_path.iterdir())
    assert kept == [cache_file(MODEL_DIR / MODEL_FILE)]
    assert kept[0].stat().st_size < 10_000_000  # zstd-compressed, not the 68 MB archive
    again = load_identifier()  # read from the kept copy
    assert list(tmp_path.iterdir()) == kept
    assert _classified(first) == _classified(again) == _classified(bundled)
    assert again.tk_nextmove == bundled.tk_nextmove
    assert again.tk_row == bundled.tk_row
    assert again.tk_output == bundled.tk_output
    assert again.nb_classes == bundled.nb_classes
    assert np.array_equal(again.nb_ptc, bundled.nb_ptc)
    assert np.array_equal(again.nb_pc, bundled.nb_pc)


def test_a_damaged_copy_is_replaced_by_the_bundled_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    cached = cache_file(MODEL_DIR / MODEL_FILE)
    assert cached is not None
    expected = _classified(LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True))
    cached.write_bytes(b"not zstd at all")  # unreadable: decompressed anew and kept again
    assert _classified(load_identifier()) == expected
    assert cached.stat().st_size > 1_000_000
    cached.write_bytes(zstandard.ZstdCompressor().compress(b"zstd, but no model inside"))
    assert _classified(load_identifier()) == expected  # read, refused, the bundled model read
    assert not cached.exists()


def test_without_a_cache_directory_the_bundled_model_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    assert cache_file(MODEL_DIR / MODEL_FILE) is None
    monkeypatch.setenv(CACHE_ENV, "relative/cache")  # not beside wherever the process runs
    monkeypatch.chdir(tmp_path)
    assert cache_file(MODEL_DIR / MODEL_FILE) is None
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"]
    assert load_identifier().classify(TEXTS[1])[0] == "de"
