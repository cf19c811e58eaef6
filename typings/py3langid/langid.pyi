from array import array
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

MODEL_FILE: str
MODEL_DIR: Path

class LanguageIdentifier:
    nb_ptc: NDArray[Any]
    nb_pc: NDArray[Any]
    nb_classes: list[str]
    tk_nextmove: array[int]
    tk_row: array[int]
    tk_output: list[Any]
    def __init__(
        self,
        nb_ptc: NDArray[Any],
        nb_pc: NDArray[Any],
        nb_classes: list[str],
        tk_nextmove: array[int],
        tk_output: list[Any],
        norm_probs: bool = ...,
        min_confidence: float | None = ...,
        *,
        tk_row: array[int],
    ) -> None: ...
    @classmethod
    def from_model_file(
        cls, model_file: str, norm_probs: bool = ..., langs: list[str] | None = ...
    ) -> LanguageIdentifier: ...
    def classify(self, text: str) -> tuple[str, float]: ...
