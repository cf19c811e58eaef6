# Types for vaderSentiment 3.3.2, which ships none: the names tracescore's tone scorer uses
# (tracescore/scorers/code/tone_vader.py, tone_fast.py), read from the library's source.
from _typeshed import Incomplete

B_INCR: float
B_DECR: float
C_INCR: float
N_SCALAR: float
NEGATE: list[str]
BOOSTER_DICT: dict[str, float]
SENTIMENT_LADEN_IDIOMS: dict[str, float]
SPECIAL_CASES: dict[str, float]

class SentiText:
    text: str
    words_and_emoticons: list[str]
    is_cap_diff: bool
    def __init__(self, text: str) -> None: ...

class SentimentIntensityAnalyzer:
    lexicon: dict[str, float]
    emojis: dict[str, str]
    def __init__(
        self, lexicon_file: str = "vader_lexicon.txt", emoji_lexicon: str = "emoji_utf8_lexicon.txt"
    ) -> None: ...
    def polarity_scores(self, text: str) -> dict[str, float]: ...
    def sentiment_valence(
        self, valence: float, sentitext: SentiText, item: str, i: int, sentiments: list[float]
    ) -> list[float]: ...
    @staticmethod
    def _but_check(words_and_emoticons: list[str], sentiments: list[float]) -> list[float]: ...
    @staticmethod
    def _special_idioms_check(valence: float, words_and_emoticons: list[str], i: int) -> float: ...
    @staticmethod
    def _negation_check(
        valence: float, words_and_emoticons: list[str], start_i: int, i: int
    ) -> float: ...

def __getattr__(name: str) -> Incomplete: ...
