# The part of py3langid tracescore/language.py uses (the package ships no types).

MODEL_FILE: str

class LanguageIdentifier:
    @classmethod
    def from_model_file(cls, model_file: str, norm_probs: bool = ...) -> LanguageIdentifier: ...
    def classify(self, text: str) -> tuple[str, float]: ...
