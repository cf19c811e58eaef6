"""The language model loaded in the background while a pass rebuilds runs: the first
identification waits for it, and a model released is loaded again."""

from __future__ import annotations

from tracescore import language
from tracescore.language import detect_language, load_in_background, release_model


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
