"""Prompt text whose long values are cut to a judge's input budget: fairly, and never unseen.

A judge prompt holds fixed text (the task, section tags, labels such as "tool call X with
arguments") and values taken from the run (the user's message, the answer, each tool result,
each conversation message). Any of those values can be hundreds of thousands of characters, and
a request past the model's window is refused (the score then errors). A :class:`Material` keeps
the values apart from the fixed text, so the request can be cut to fit by :func:`fit_prompt`:
the room left after the fixed text is shared out so that a value smaller than its fair share is
kept whole and the larger ones get equal shares (max-min fairness), each cut value ending in
:func:`cut_marker`, which every judge's system prompt explains. A prompt that fits is sent as it
is; only its UTF-8 size is measured then (an upper bound on its tokens), so an ordinary request
costs no token counting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from tracescore.judge.protocol import Budget, utf8_size

REQUEST_OVERHEAD = 2_000
"""Tokens kept for what a prompt step does not render itself: the answer schema the judge client
appends (up to ~1,000 tokens for the largest), chat framing, and slack for the tokenizer of a
model other than the one counted with."""
MARKER_TOKENS = 32
"""Tokens a cut marker may take (``… [123,456 more characters cut: 1,234-567,890 of 567,890]``
is ~25 under GPT's tokenizers)."""
LEAST_KEPT = 64
"""Tokens a cut value keeps however many share the room: its start stays readable."""
_COUNTED = 4_000
"""Bytes under which a text's UTF-8 size stands in for its tokens (counting would cost more
than the difference saves)."""


def cut_marker(kept: int, total: int) -> str:
    """What follows a value cut after ``kept`` of its ``total`` characters: how much was cut
    and which characters (the judge's system prompt says what the marker means)."""
    return f"… [{total - kept:,} more characters cut: {kept + 1:,}-{total:,} of {total:,}]"


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class Value:
    """A value from the run in a prompt: its ``text`` and how it is ``shown`` (neutralised,
    indented) once cut, if it must be."""

    text: str
    shown: Callable[[str], str] = _same

    def render(self, kept: int | None = None) -> str:
        """The value as the prompt shows it: whole, or its first ``kept`` characters and the marker."""
        if kept is None or kept >= len(self.text):
            return self.shown(self.text)
        return self.shown(self.text[:kept] + cut_marker(kept, len(self.text)))


class Material(str):
    """Prompt text that knows its cuttable :class:`Value` parts: a ``str`` (its whole
    rendering), so it goes wherever prompt text goes, and :func:`fit_prompt` can cut it."""

    parts: tuple[str | Value, ...]

    def __new__(cls, *parts: str | Value) -> Material:
        flat: list[str | Value] = []
        shown: list[str] = []  # a Material part's text is reused, not rendered again
        for part in parts:
            flat.extend(part.parts if isinstance(part, Material) else [part])
            shown.append(part.render() if isinstance(part, Value) else part)
        made = super().__new__(cls, "".join(shown))
        made.parts = tuple(flat)
        return made

    def rendered(self, kept: Sequence[int | None]) -> str:
        """The text with each value cut after ``kept[i]`` characters (``None``: whole)."""
        shares = iter(kept)
        return "".join(p if isinstance(p, str) else p.render(next(shares)) for p in self.parts)

    def values(self) -> list[Value]:
        return [part for part in self.parts if isinstance(part, Value)]


def joined(separator: str, blocks: Iterable[str]) -> Material:
    """``blocks`` joined by ``separator``, the values of those that are :class:`Material` kept."""
    parts: list[str] = []
    for number, block in enumerate(blocks):
        if number:
            parts.append(separator)
        parts.append(block)
    return Material(*parts)


def measure(budget: Budget, text: str) -> int:
    """Tokens of ``text``: its UTF-8 size when that is small, else the judge's count (kept for
    the next steps of the run, which show the same answer or transcript again)."""
    size = utf8_size(text)
    return size if size <= _COUNTED else _counted(budget, text)


@lru_cache(maxsize=32)
def _counted(budget: Budget, text: str) -> int:
    return budget.count(text)


def fit_request(prompt: str, instructions: str | None, budget: Budget) -> str:
    """``prompt`` as one request to a judge with ``budget`` sends it: cut to what the budget
    leaves once the system prompt (``instructions``) and :data:`REQUEST_OVERHEAD` are taken."""
    if utf8_size(prompt) + utf8_size(instructions or "") + REQUEST_OVERHEAD <= budget.tokens:
        return str(prompt)
    space = budget.tokens - REQUEST_OVERHEAD - measure(budget, instructions or "")
    return fit_prompt(prompt, space, budget)


def fit_prompt(prompt: str, space: int, budget: Budget) -> str:
    """``prompt`` within ``space`` tokens: as it is when it fits (or has no values to cut), else
    with its longest values cut to equal shares of the room the fixed text and the shorter
    values leave, each cut saying where and how much."""
    if not isinstance(prompt, Material) or utf8_size(prompt) <= space:
        return str(prompt)
    values = prompt.values()
    if not values:
        return str(prompt)
    fixed = measure(budget, "".join(part for part in prompt.parts if isinstance(part, str)))
    sizes = [measure(budget, value.render()) for value in values]
    room = space - fixed - 2 * len(values)  # a token either side of a value may tokenize apart
    if sum(sizes) <= room:
        return str(prompt)
    level = fair_share(sizes, room)
    return prompt.rendered(
        [
            None if size <= level else _kept(value, size, level, budget)
            for value, size in zip(values, sizes, strict=True)
        ]
    )


def fair_share(sizes: Sequence[int], room: int) -> int:
    """The most tokens each value may keep so that all fit ``room``: values under it are kept
    whole, the others cut to it (plus their marker); at least :data:`LEAST_KEPT`."""
    left = room
    for position, size in enumerate(sorted(sizes)):
        share = left // (len(sizes) - position) - MARKER_TOKENS
        if size > share:
            return max(share, LEAST_KEPT)
        left -= size
    return max(sizes, default=0)


def _kept(value: Value, size: int, tokens: int, budget: Budget) -> int:
    """How many characters of ``value`` are shown in ``tokens``: estimated from its measured
    ``size``, checked by counting, and ended at a line or word boundary where there is one."""
    text = value.text
    end = max(1, min(len(text) - 1, int(len(text) * tokens / max(size, 1) * 0.95)))
    while end > 1 and not budget.fits(value.shown(text[:end]), tokens):
        end = int(end * 0.9)
    boundary = max(text.rfind("\n", end // 2, end), text.rfind(" ", end // 2, end))
    return boundary + 1 if boundary > 0 else end
