"""The checks of what an answer states against the run's evidence: values found nowhere in it
(``grounding``), values that contradict a tool's result (``contradiction``) and entities that
differ between the request, the tool calls and the answer (``entities``).

Each check returns its findings, short sentences naming what disagrees with what; none means it
passed. They compare values, never meanings: a contradiction paraphrased in words ("warm" for
5 °C) passes, and a value the agent computed (a sum, a date five days on) is flagged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache

from tracescore.scorers.code.consistency.evidence import Evidence, ToolCall, leaves
from tracescore.scorers.code.consistency.values import (
    IDS,
    MONTHS,
    Number,
    Values,
    cached_dates_and_times,
    cached_readings,
    dates_and_times,
    is_claim,
    matches,
    readings_of,
    values_of,
)

STATES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (
        ("pending", "processing", "being prepared", "not shipped", "awaiting shipment"),
        ("shipped", "in transit", "on its way", "on the way", "dispatched", "out for delivery"),
        ("delivered",),
        ("cancelled", "canceled"),
        ("returned", "refunded"),
        ("delayed", "on hold", "backordered", "back-ordered"),
    ),
    (
        ("sunny", "clear", "sunshine"),
        ("cloudy", "overcast", "clouds"),
        ("rain", "rainy", "raining", "showers", "drizzle"),
        ("snow", "snowing", "snowy", "sleet", "snow showers"),
        ("thunderstorm", "thunderstorms", "storm", "storms"),
        ("fog", "foggy", "mist", "misty", "haze"),
    ),
    (
        ("in stock", "available"),
        ("out of stock", "unavailable", "sold out", "not available"),
    ),
    (("paid",), ("unpaid", "overdue", "payment failed")),
)
"""Values of one field that exclude each other (an order is shipped or delivered), each a group
of ways to say it: an answer saying a state of a class the tool results state, none of whose
states it names, contradicts them."""
_STATE_GROUP = {
    word: (kind_index, group_index)
    for kind_index, kind in enumerate(STATES)
    for group_index, group in enumerate(kind)
    for word in group
}
"""Each state word or phrase (lowercase, hyphens kept) to its ``(class, group)``."""
_STATE_FIRST_WORDS = frozenset(phrase.split()[0] for phrase in _STATE_GROUP)
_LETTERS = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)?")
_HEDGED = re.compile(
    r"(?:\bnot|n't|\bno|\bnever|\bwithout|\bwill|\bbe|\bexpected|\bestimated|\bshould|\bonce|\bwhen"
    r"|\buntil|\bbefore|\bafter|\bif|\bmay|\bmight|\bcould|\bchance of|\bpossible|\blater|\btomorrow"
    r"|\btonight|\byet)\W+(?:\w+\W+){0,2}$",
    re.IGNORECASE,
)
"""Words before a state that make it no statement of the present one (``not yet delivered``,
``expected to be delivered``, ``a chance of rain later``)."""
_FIELD_UNITS = (
    (re.compile(r"temp|feels|°|celsius|fahrenheit|degrees"), ("°", "º", "deg")),
    (re.compile(r"humid|percent|pct|rate|chance|probab|share|discount"), ("%",)),
    (re.compile(r"wind|speed|kmh|mph"), ("km", "mph", "mi")),
)
_CURRENCY = re.compile(
    r"[$€£¥₹]\s*$|\b(?:usd|eur|gbp|chf|jpy|cad|aud|dollars?|euros?|pounds?)\b", re.I
)
_MONEY_FIELD = re.compile(r"price|total|amount|cost|balance|fee|refund|charge|subtotal|paid|due")
_ENTITY_ARG = re.compile(
    r"city|location|place|town|country|destination|origin|name|customer|person|user|product|item|"
    r"airport|station|region|address|company|ticker|symbol|sku|order|account|id$|_id|number",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]{3,}")
_NAMED = re.compile(
    r"\b(?i:in|at|for|to|from|near|around|of|en|à|de|nach|für)\s+"
    r"((?:[A-Z][\w'’-]+)(?:\s+[A-Z][\w'’-]+)?)"
)
"""A capitalised name after a preposition: where an answer names the place or thing it is
about (``in Lyon``, ``for Acme Corp``)."""
_NOT_NAMES = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday today tomorrow settings celsius "
    "fahrenheit the this that your our my you i we it english spanish french german".split()
) | frozenset(MONTHS)


_COMBINING = re.compile(r"[\u0300-\u036f]")


def folded(text: str) -> str:
    """``text`` compared loosely: lowercased, accents dropped."""
    lowered = text.casefold()
    if lowered.isascii():
        return lowered
    return _COMBINING.sub("", unicodedata.normalize("NFKD", lowered))


@dataclass
class ValueEvidence:
    """The evidence's values, gathered once for the three checks."""

    evidence: Evidence

    @cached_property
    def own_text(self) -> str:
        """The run's own evidence as one text (the context and system prompt are read apart,
        cached: runs share them)."""
        return "\n".join([*self.evidence.user_texts, self.evidence.tool_text])

    @cached_property
    def readings(self) -> list[float]:
        """Every reading of the evidence's numbers, sorted (searched by bisection): a tool's
        numeric fields as they are, numbers in its text fields and in the other texts read."""
        found = readings_of("\n".join(self.evidence.user_texts))
        for call in self.evidence.calls:
            for part in (call.args, call.result_text if call.failed else call.result):
                for _, value in leaves(part):
                    if isinstance(value, float | int) and not isinstance(value, bool):
                        found.append(float(value))
                    elif isinstance(value, str):
                        found.extend(readings_of(value))
        for text in (*self.evidence.context, self.evidence.system):
            found.extend(cached_readings(text))
        return sorted(set(found))

    @cached_property
    def values(self) -> list[Values]:
        """Dates and times of the evidence (numbers are :attr:`readings`)."""
        shared = [*self.evidence.context, self.evidence.system]
        own = dates_and_times(self.own_text)
        return [own, *(cached_dates_and_times(text) for text in shared if text)]

    @cached_property
    def dates(self) -> set[tuple[int, int]]:
        return {key for values in self.values for key in values.dates}

    @cached_property
    def times(self) -> set[int]:
        return {minute for values in self.values for minute in values.times}

    @cached_property
    def _plain_own_text(self) -> str:
        return _plain(self.own_text)

    def knows(self, key: str) -> bool:
        """Whether an id, as :func:`ids_of` writes it (letters and digits only), is in the
        evidence written any way (``NW-48213``, ``nw 48213``)."""
        return key in self._plain_own_text or any(
            key in _cached_plain(text) for text in (*self.evidence.context, self.evidence.system)
        )

    @cached_property
    def folded_text(self) -> str:
        return folded("\n".join(self.evidence.texts()))

    @cached_property
    def answer(self) -> Values:
        return values_of(self.evidence.answer)

    @cached_property
    def ungrounded(self) -> list[Number]:
        """The answer's numbers (claims, not small counts) that no evidence backs."""
        return [
            number
            for number in self.answer.numbers
            if is_claim(number) and not matches(number, self.readings)
        ]

    @cached_property
    def contradicted(self) -> dict[int, str]:
        """Ungrounded numbers that state a tool result's field: their position, the finding."""
        found: dict[int, str] = {}
        answer = self.evidence.answer
        for number in self.ungrounded:
            before = answer[max(0, number.start - 40) : number.start].lower()
            for call in self.evidence.calls:
                if call.failed:
                    continue
                field = _field_stated(number, before, call)
                if field is not None:
                    found[number.start] = (
                        f"answer says {number.text.strip()}, {call.name} returned "
                        f"{field[0]} {field[1]}"
                    )
                    break
        return found


_NOT_ALPHANUMERIC = re.compile(r"[^0-9a-z]")


def _plain(text: str) -> str:
    """``text`` lowercased, accents dropped, everything but letters and digits removed."""
    return _NOT_ALPHANUMERIC.sub("", folded(text))


@lru_cache(maxsize=256)
def _cached_plain(text: str) -> str:
    """``_plain`` for texts runs repeat (the system prompt, shared context)."""
    return _plain(text)


def _field_stated(number: Number, before: str, call: ToolCall) -> tuple[str, object] | None:
    """The numeric field of ``call``'s result that ``number`` states, judged by its unit or by
    the field's name just before it; None when it states none."""
    money = bool(_CURRENCY.search(before[-3:]) or _CURRENCY.search(number.unit))
    for key, value in leaves(call.result):
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        name = key.lower()
        if money and _MONEY_FIELD.search(name):
            return key, value
        for field_pattern, units in _FIELD_UNITS:
            if field_pattern.search(name) and number.unit.startswith(units):
                return key, value
        words = [word for word in re.split(r"[_\W]+", name) if len(word) >= 4]
        if words and any(word[:5] in before for word in words):
            return key, value
    return None


def grounding(values: ValueEvidence) -> list[str]:
    """Numbers, dates, times and ids of the answer that appear nowhere in the evidence."""
    findings = [
        f"answer says {number.text.strip()}, found nowhere in the run"
        for number in values.ungrounded
        if number.start not in values.contradicted
    ]
    own = values.own_text
    findings += [
        f"answer says {text}, a date found nowhere in the run"
        for text, keys in values.answer.date_texts
        # an ISO date in a tool result is the common case: found without reading every date
        if not any(f"-{month:02d}-{day:02d}" in own for month, day in keys)
        and not keys & values.dates
    ]
    findings += [
        f"answer says {text}, a time found nowhere in the run"
        for text, minutes in values.answer.time_texts
        if not any(f"{minute // 60:02d}:{minute % 60:02d}" in own for minute in minutes)
        and not minutes & values.times
    ]
    findings += [
        f"answer names {key.upper()}, an id found nowhere in the run"
        for key in sorted(values.answer.ids)
        if not values.knows(key)
    ]
    return findings


def contradiction(values: ValueEvidence) -> list[str]:
    """Tool-result fields the answer states with another value: numbers by their unit or
    field name, states (shipped, rain, in stock) by their class."""
    findings = list(values.contradicted.values())
    evidence = values.evidence
    said = _states(evidence.answer)
    if not said:
        return findings
    stated: dict[int, dict[int, str]] = {}
    for call in evidence.calls:
        if call.failed:
            continue
        for key, value in leaves(call.result):
            for kind, group in _value_states(key, value):
                stated.setdefault(kind, {})[group] = f"{call.name} returned {key} {value}"
    for kind, groups in said.items():
        returned = stated.get(kind)
        if returned and not groups.keys() & returned.keys():
            claim = next(iter(groups.values()))
            findings.append(f"answer says {claim}, {next(iter(returned.values()))}")
    return findings


def _state_words(text: str) -> Iterator[tuple[str, int]]:
    """The state words and phrases of ``text`` (up to three words) and where each starts."""
    words = [(match.group().lower(), match.start()) for match in _LETTERS.finditer(text)]
    for index, (word, start) in enumerate(words):
        if word not in _STATE_FIRST_WORDS:
            continue
        for length in (3, 2, 1):
            phrase = " ".join(w for w, _ in words[index : index + length])
            if phrase in _STATE_GROUP:
                yield phrase, start
                break


def _states(text: str) -> dict[int, dict[int, str]]:
    """The states ``text`` asserts, by class and group (hedged or negated ones left out)."""
    found: dict[int, dict[int, str]] = {}
    for phrase, start in _state_words(text):
        if _HEDGED.search(text[max(0, start - 40) : start]):
            continue
        kind, group = _STATE_GROUP[phrase]
        found.setdefault(kind, {}).setdefault(group, phrase)
    return found


def _value_states(key: str, value: object) -> Iterator[tuple[int, int]]:
    if isinstance(value, bool):
        name = key.lower()
        if "stock" in name or "availab" in name:
            yield 2, 0 if value else 1
        elif name in ("paid", "is_paid"):
            yield 3, 0 if value else 1
        return
    if isinstance(value, str) and len(value) <= 60:
        for phrase, _ in _state_words(value.replace("_", " ")):
            yield _STATE_GROUP[phrase]


def entities(values: ValueEvidence) -> list[str]:
    """The request, the tool calls' arguments and the answer name the same things: every id a
    tool was called with is one the request (or an earlier result) gave, every name argument
    is one the request says, and the answer names no place or thing the run never mentions."""
    evidence = values.evidence
    request = folded(evidence.request_text)
    findings = []
    for position, call in enumerate(evidence.calls):
        for key, value in leaves(call.args):
            if not isinstance(value, str | int) or isinstance(value, bool):
                continue
            text = str(value).strip()
            if problem := _argument_problem(key, text, request, evidence, position):
                findings.append(f"{call.name} was called with {key} {text!r}; {problem}")
    answer = evidence.answer
    for match in _NAMED.finditer(answer):
        name = match.group(1)
        first = name.split()[0]
        if folded(first) in _NOT_NAMES:
            continue
        if folded(first) not in values.folded_text:
            findings.append(f"answer names {name}, which the run never mentions")
    return findings


def _argument_problem(
    key: str, text: str, request: str, evidence: Evidence, position: int
) -> str | None:
    """Why an argument of the call at ``position`` names something other than what was asked
    (the request, the system prompt, the context or an earlier call's result), or None."""
    if not text or len(text) > 60:
        return None
    ids = _ids(text)
    if ids and not dates_and_times(text).dates:
        asked = _ids(request)
        if not asked or ids & asked or ids & _ids(_known(evidence, position)):
            return None
        named = sorted({token for token in IDS.findall(evidence.request_text) if _ids(token)})
        return f"the request names {', '.join(named)}"
    if not _ENTITY_ARG.search(key) or not _is_name(text):
        return None
    words = [folded(word) for word in _WORD.findall(text.split(",")[0])]
    if not words or any(word in request for word in words):
        return None
    known = _known(evidence, position)
    if any(word in known for word in words):
        return None
    return "the request does not name it"


def _known(evidence: Evidence, position: int) -> str:
    """What the agent knew besides the request when it made call ``position``: the system
    prompt, the context and the earlier calls (folded; read only for a doubtful argument)."""
    earlier = " ".join(f"{c.args_text} {c.result_text}" for c in evidence.calls[:position])
    return folded(f"{evidence.system}\n{' '.join(evidence.context)}\n{earlier}")


@lru_cache(maxsize=512)
def _ids(text: str) -> frozenset[str]:
    """Ids in ``text``, each as its letters and digits (``b755`` for ``B-755``) and as its
    digits when it has three or more (an order asked as ``NW-48213`` and looked up as ``48213``)."""
    found: set[str] = set()
    for token in IDS.findall(text):
        digits = re.sub(r"\D", "", token)
        if len(digits) >= 3:
            found.add(digits)
        if any(char.isalpha() for char in token) and len(digits) >= 2:
            found.add(re.sub(r"[^0-9a-z]", "", token.lower()))
    return frozenset(found)


def _is_name(text: str) -> bool:
    """Capitalised words (``New York``, ``Jane Doe``, ``Acme Pro X2``), not a free-text query."""
    words = text.split()
    return 0 < len(words) <= 4 and all(word[:1].isupper() or word[:1].isdigit() for word in words)
