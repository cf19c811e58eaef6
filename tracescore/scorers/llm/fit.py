"""A long context against a judge's input budget: split into parts that each fit one request.

A judge refuses a request over its window (a 700,000-character tool result is some 130,000 to
480,000 tokens, past gpt-4o-mini's 128,000), and the score then errors. Scorers whose verdicts
are per item (each claim against the context, each context piece) ask about long contexts part
by part and combine the answers per item, so no part of it goes unseen; other long material is
cut to fit with a marker (:mod:`tracescore.scorers.material`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracescore.judge.protocol import Budget
from tracescore.scorers.llm.run_text import indented
from tracescore.scorers.material import REQUEST_OVERHEAD, measure
from tracescore.scorers.steps import StepContext

OVERLAP = 400
"""Characters each part of a split piece repeats from the end of the one before, so a sentence
cut at a boundary is whole in one of them."""


def room(ctx: StepContext, *fixed: str) -> int:
    """Tokens left for the material once ``fixed`` (the task, other sections, the system
    prompt) and the request overhead are taken from the budget."""
    budget = ctx.budget
    return budget.tokens - REQUEST_OVERHEAD - sum(measure(budget, text) for text in fixed)


def context_parts(pieces: Sequence[str], space: int, budget: Budget) -> list[str]:
    """The numbered context (``[i] piece``) as one text per request, each within ``space``
    tokens: pieces packed in order, a piece larger than ``space`` split into parts that say
    which characters of it they hold. A single text when everything fits."""
    return [text for text, _ in context_chunks(pieces, space, budget)]


def context_chunks(
    pieces: Sequence[str], space: int, budget: Budget
) -> list[tuple[str, list[int]]]:
    """:func:`context_parts` with the indices of the pieces each text shows (in order, once)."""
    if not pieces:
        return [("(none)", [])]
    lines: list[tuple[str, int, int]] = []
    for index, piece in enumerate(pieces):
        line = f"[{index}] {indented(piece)}"
        size = measure(budget, line)
        if size <= space:
            lines.append((line, size, index))
            continue
        spans = _split(piece, space - 60, budget, indented)
        for number, (start, end) in enumerate(spans, 1):
            head = (
                f"[{index}] (part {number} of {len(spans)}: characters {start + 1:,}-{end:,} "
                f"of {len(piece):,}) "
            )
            lines.append((head + indented(piece[start:end]), space, index))
    chunks: list[list[tuple[str, int]]] = [[]]
    used = 0
    for line, size, index in lines:
        if chunks[-1] and used + size + 1 > space:
            chunks.append([])
            used = 0
        chunks[-1].append((line, index))
        used += size + 1
    return [
        ("\n".join(line for line, _ in chunk), list(dict.fromkeys(index for _, index in chunk)))
        for chunk in chunks
    ]


def _split(
    text: str, space: int, budget: Budget, shown: Callable[[str], str] = str
) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of ``text`` whose ``shown`` form each fits ``space``
    tokens, cut at a line or word boundary where there is one, each repeating the last
    :data:`OVERLAP` characters of the one before."""
    per_token = len(text) / max(budget.count(shown(text)), 1)
    size = max(int(space * per_token * 0.95), 1)
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        while end > start + 1 and not budget.fits(shown(text[start:end]), space):
            end = start + int((end - start) * 0.9)
        if end < len(text):
            boundary = max(
                text.rfind("\n", start + (end - start) // 2, end),
                text.rfind(" ", start + (end - start) // 2, end),
            )
            end = boundary + 1 if boundary > start else end
        spans.append((start, end))
        if end >= len(text):
            break
        start = max(end - OVERLAP, start + 1)
    return spans
