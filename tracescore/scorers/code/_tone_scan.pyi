"""Types of the compiled ``_tone_scan.pyx``, which mypy cannot read."""

from collections.abc import Callable

import numpy as np

LEXICON: int
RULE: int
PLAIN: int
REACH_2: int
BUT: int
ENDER: int
EXPAND: int
EMOJI_TERMINATOR: int
UPPER: int

def token_ids(
    tokens: list[str],
    ids: dict[str, int],
    flags_of: np.ndarray,
    part_start: np.ndarray,
    part_count: np.ndarray,
    parts: np.ndarray,
    expand: int,
) -> tuple[np.ndarray | None, int]: ...
def group_scores(
    ids: np.ndarray,
    flags_of: np.ndarray,
    valence_of: np.ndarray,
    stops: list[int] | None,
    full_valence: Callable[[int, int, int], float],
    negation_scalar: float,
) -> tuple[list[float], list[int]]: ...
