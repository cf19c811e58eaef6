"""The checks of what an answer states against the run's evidence: values found nowhere in it
(``grounding``), values that contradict a tool's result (``contradiction``) and entities that
differ between the request, the tool calls and the answer (``entities``).

Each check returns its findings, short sentences naming what disagrees with what; none means it
passed. They compare values, never meanings: a contradiction paraphrased in words ("warm" for
5 °C) passes, and a value the agent computed (a sum, a date five days on) is flagged.

Over 500 lines and kept whole: the three checks read one :class:`ValueEvidence`, the run's
values found once by the rules above it (units, currencies, names, states), so what counts as
a value is decided in one place for all three; split apart, a change to those rules would have
to be made alike in three modules.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from tracescore.scorers.code.consistency.evidence import Evidence, ToolCall
from tracescore.scorers.code.consistency.values import (
    DIRECTION_WORDS,
    IDS,
    MONTHS,
    Number,
    Readings,
    Values,
    cached_dates_and_times,
    cached_readings,
    dates_and_times,
    is_claim,
    matches,
    readings_of,
    values_of,
)
from tracescore.scorers.lazy import lazy

STATES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (
        ("pending", "processing", "being prepared", "not shipped", "awaiting shipment"),
        ("shipped", "in transit", "on its way", "on the way", "dispatched", "out for delivery"),
        ("delivered",),
        ("cancelled", "canceled"),
        ("returned", "refunded"),
        ("delayed", "on hold", "backordered", "back-ordered"),
        ("on time", "on schedule", "as scheduled"),
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
    (
        ("approved", "accepted", "granted"),
        ("rejected", "declined", "denied", "refused"),
        ("pending", "under review", "in review", "awaiting approval"),
    ),
    (
        ("active",),
        ("inactive", "suspended", "deactivated", "paused"),
        ("expired",),
        ("cancelled", "canceled"),
    ),
    (("in progress", "being worked on"), ("resolved", "closed", "fixed")),
)
"""Values of one field that exclude each other (an order is shipped or delivered, a refund
approved or rejected, a flight delayed or on time), each a group of ways to say it: an answer
saying a state of a class the tool results state, none of whose states it names, contradicts
them. A word may be a state of several classes (``pending``, ``cancelled``)."""
_STATE_GROUPS: dict[str, list[tuple[int, int]]] = {}
for _kind, _groups in enumerate(STATES):
    for _group, _phrases in enumerate(_groups):
        for _phrase in _phrases:
            _STATE_GROUPS.setdefault(_phrase, []).append((_kind, _group))
_STATE = re.compile(
    # the lookahead holds every phrase's first letter: most positions fail there, at once,
    # instead of in each of the phrases
    rf"\b(?=[{''.join(sorted({phrase[0] for phrase in _STATE_GROUPS}))}])(?:"
    + "|".join(
        re.escape(phrase).replace(r"\ ", r"\s+")
        for phrase in sorted(_STATE_GROUPS, key=len, reverse=True)
    )
    + r")\b"
)
"""Every state word and phrase, longest first, in one pattern: a lowercased text's states in
one pass (matching case-insensitively costs three times as much as lowercasing first)."""
_STATE_WORDS = frozenset(re.split(r"[\s-]", phrase)[0] for phrase in _STATE_GROUPS)
"""The first word of every state phrase: an answer holding none states nothing."""
_HEDGES = frozenset(
    "not no never without will be expected estimated should once when until before after if may "
    "might could chance possible later tomorrow tonight yet".split()
)
_HEDGE_WORD = re.compile(r"[\w'’]+")


def _hedged(before: str) -> bool:
    """Whether one of the last three words of ``before`` makes the state that follows no
    statement of the present one (``not yet delivered``, ``expected to be delivered``, ``a
    chance of rain later``)."""
    return any(
        word in _HEDGES or word.endswith(("n't", "n’t"))
        for word in _HEDGE_WORD.findall(before)[-3:]
    )


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
_PREPOSITIONS = frozenset("in at for to from near around of en à de nach für".split())
_CAPITALISED = re.compile(
    r"(?<=\s)(?=[A-Z])(?!(?i:in|at|for|to|from|near|around|of|en|à|de|nach|für)\s)"
    r"[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?"
)
"""One or two capitalised words (not a capitalised preposition): found first, the word before
them read after (a pattern starting with the prepositions is tried at every word: twice as
slow). The capital is looked for before the prepositions are: most positions fail there."""


def _named(text: str) -> Iterator[str]:
    """The capitalised names after a preposition: where a text names the place or thing it is
    about (``in Lyon``, ``for Acme Corp``)."""
    for match in _CAPITALISED.finditer(text):
        before = text[max(0, match.start() - 8) : match.start()].split()
        if before and before[-1].lower() in _PREPOSITIONS:
            yield match.group()


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

    @lazy
    def own_text(self) -> str:
        """The run's own evidence as one text (the context and system prompt are read apart,
        cached: runs share them)."""
        return "\n".join([*self.evidence.user_texts, self.evidence.tool_text])

    @lazy
    def readings(self) -> Readings:
        """Every reading of the evidence's numbers, sorted (searched by bisection): a tool's
        numeric fields as they are, the numbers of its text fields and of the other texts read
        in one pass each."""
        found = Readings()
        texts = list(self.evidence.user_texts)
        for call in self.evidence.calls:
            for fields in (call.arg_fields, call.fields):
                for _, value in fields:
                    kind = type(value)
                    if kind is float or kind is int:
                        found.values.append(value)
                    elif kind is str:
                        texts.append(value)
        for readings in (
            readings_of("\n".join(texts)),
            *(cached_readings(text) for text in (*self.evidence.context, self.evidence.system)),
        ):
            found.values += readings.values
            found.calendar += readings.calendar
        return Readings(sorted(set(found.values)), sorted(set(found.calendar)))

    @lazy
    def values(self) -> list[Values]:
        """Dates and times of the evidence (numbers are :attr:`readings`)."""
        shared = [*self.evidence.context, self.evidence.system]
        own = dates_and_times(self.own_text)
        return [own, *(cached_dates_and_times(text) for text in shared if text)]

    @lazy
    def dates(self) -> set[tuple[int, int]]:
        return {key for values in self.values for key in values.dates}

    @lazy
    def times(self) -> set[int]:
        return {minute for values in self.values for minute in values.times}

    @lazy
    def _plain_own_text(self) -> str:
        return _plain(self.own_text)

    def knows(self, key: str) -> bool:
        """Whether an id, as :func:`ids_of` writes it (letters and digits only), is in the
        evidence written any way (``NW-48213``, ``nw 48213``)."""
        return key in self._plain_own_text or any(
            key in _cached_plain(text) for text in (*self.evidence.context, self.evidence.system)
        )

    def mentions(self, word: str) -> bool:
        """Whether a (folded) word is in the evidence's texts, folded: read text by text, the
        request first, where most names an answer gives are; the tool calls are written out
        as text only when the request does not hold it. (The same as looking in all the texts
        joined: a word holds no line break, and folding reads one character at a time.)"""
        pieces = self._folded_pieces
        for index, text in enumerate(self.evidence.texts()):
            if index == len(pieces):
                pieces.append(folded(text))
            if word in pieces[index]:
                return True
        return False

    @lazy
    def _folded_pieces(self) -> list[str]:
        """The evidence's texts folded so far, in :meth:`Evidence.texts` order."""
        return []

    @lazy
    def answer(self) -> Values:
        return values_of(self.evidence.answer)

    @lazy
    def ungrounded(self) -> list[Number]:
        """The answer's numbers (claims, not small counts) that no evidence backs."""
        found = [
            number
            for number in self.answer.numbers
            if is_claim(number) and not matches(number, self.readings)
        ]
        return [number for number in found if not self._backed_unsigned(number)]

    def _backed_unsigned(self, number: Number) -> bool:
        """A negative field's size, as written (``a drop of $3.91``, ``it moved 4.2 %`` for
        ``-3.91`` and ``-4.2``), unless said as a rise: not converted (``35 °C`` is no
        ``-1.2 °F``)."""
        negated = number._replace(readings=tuple(-reading for reading in number.readings))
        return matches(negated, self.readings, converted=False) and number.direction <= 0

    @lazy
    def numeric_fields(self) -> list[tuple[ToolCall, str, float]]:
        """``(call, field, value)`` of every number a tool that worked returned."""
        return [
            (call, key, value)
            for call in self.evidence.calls
            if not call.failed
            for key, value in call.fields
            if type(value) is float or type(value) is int
        ]

    @lazy
    def contradicted(self) -> dict[int, str]:
        """Ungrounded numbers that state a tool result's field, and numbers stated as a change
        the other way than the field's sign (``up 3 %`` for ``-3.0``): their position, the
        finding."""
        found: dict[int, str] = {}
        if not DIRECTION_WORDS.isdisjoint(self.evidence.answer_words):
            for number in self.answer.numbers:
                if direction := number.direction:
                    reversed_field = _reversed(number, direction, self.numeric_fields)
                    if reversed_field is not None:
                        call, key, value = reversed_field
                        found[number.start] = (
                            f"answer says {'up' if direction > 0 else 'down'} "
                            f"{number.text.strip()}, {call.name} returned {key} {value}"
                        )
        answer = self.evidence.answer
        for number in self.ungrounded:
            if number.start in found:
                continue
            before = answer[max(0, number.start - 40) : number.start].lower()
            stated = _field_stated(number, before, self.numeric_fields)
            if stated is not None:
                call, key, value = stated
                found[number.start] = (
                    f"answer says {number.text.strip()}, {call.name} returned {key} {value}"
                )
        return found


def _reversed(
    number: Number, direction: int, fields: list[tuple[ToolCall, str, float]]
) -> tuple[ToolCall, str, float] | None:
    """The numeric field ``number`` states with the other sign, when every field of its size
    has that sign (a field of the same size and the stated sign backs it)."""
    sizes = {abs(reading) for reading in number.readings}
    same = [
        (call, key, value)
        for call, key, value in fields
        if value
        and any(abs(abs(value) - size) <= max(number.tolerance, size * 0.01) for size in sizes)
    ]
    if same and all(value * direction < 0 for _, _, value in same):
        return same[0]
    return None


_NOT_ALPHANUMERIC = re.compile(r"[^0-9a-z]")


_ASCII_PLAIN = str.maketrans(
    "", "", "".join(chr(code) for code in range(128) if _NOT_ALPHANUMERIC.match(chr(code)))
)
"""Deletes every ASCII character :data:`_NOT_ALPHANUMERIC` matches."""


def _plain(text: str) -> str:
    """``text`` lowercased, accents dropped, everything but letters and digits removed (an ASCII
    text by a translation table: a fourth of the pattern's time)."""
    lowered = folded(text)
    if lowered.isascii():
        return lowered.translate(_ASCII_PLAIN)
    return _NOT_ALPHANUMERIC.sub("", lowered)


@lru_cache(maxsize=256)
def _cached_plain(text: str) -> str:
    """``_plain`` for texts runs repeat (the system prompt, shared context)."""
    return _plain(text)


def _field_stated(
    number: Number, before: str, fields: list[tuple[ToolCall, str, float]]
) -> tuple[ToolCall, str, float] | None:
    """The numeric field of a tool's result that ``number`` states, judged by its unit or by
    the field's name just before it; None when it states none."""
    money = bool(_CURRENCY.search(before[-3:]) or _CURRENCY.search(number.unit))
    for call, key, value in fields:
        name = key.lower()
        if money and _MONEY_FIELD.search(name):
            return call, key, value
        for field_pattern, units in _FIELD_UNITS:
            if field_pattern.search(name) and number.unit.startswith(units):
                return call, key, value
        words = [word for word in _FIELD_WORDS.split(name) if len(word) >= 4]
        if words and any(word[:5] in before for word in words):
            return call, key, value
    return None


_FIELD_WORDS = re.compile(r"[_\W]+")


def grounding(values: ValueEvidence) -> list[str]:
    """Numbers, dates, times and ids of the answer that appear nowhere in the evidence."""
    findings = [
        f"answer says {number.text.strip()}, found nowhere in the run"
        for number in values.ungrounded
        if number.start not in values.contradicted
    ]
    answer = values.answer
    if not (answer.date_texts or answer.time_texts):
        return findings + _unknown_ids(values)
    own = values.own_text  # joined only for an answer with dates or times (most have none)
    findings += [
        f"answer says {text}, a date found nowhere in the run"
        for text, keys in answer.date_texts
        # an ISO date in a tool result is the common case: found without reading every date
        if not any(f"-{month:02d}-{day:02d}" in own for month, day in keys)
        and not keys & values.dates
    ]
    findings += [
        f"answer says {text}, a time found nowhere in the run"
        for text, minutes in answer.time_texts
        if not any(f"{minute // 60:02d}:{minute % 60:02d}" in own for minute in minutes)
        and not minutes & values.times
    ]
    return findings + _unknown_ids(values)


def _unknown_ids(values: ValueEvidence) -> list[str]:
    """The grounding findings for the answer's ids the evidence does not hold."""
    return [
        f"answer names {key.upper()}, an id found nowhere in the run"
        for key in sorted(values.answer.ids)
        if not values.knows(key)
    ]


def contradiction(values: ValueEvidence) -> list[str]:
    """Tool-result fields the answer states with another value: numbers by their unit or
    field name (or a change by its sign), states (shipped, rain, in stock) by their class."""
    findings = list(values.contradicted.values())
    evidence = values.evidence
    if _STATE_WORDS.isdisjoint(evidence.answer_words):
        return findings
    said = _states(evidence.answer_lower)
    if not said:
        return findings
    stated: dict[int, dict[int, str]] = {}
    for call in evidence.calls:
        if call.failed:
            continue
        for key, value in call.fields:
            for kind, group in _value_states(key, value):
                stated.setdefault(kind, {})[group] = f"{call.name} returned {key} {value}"
    for kind, groups in said.items():
        returned = stated.get(kind)
        if returned and not groups.keys() & returned.keys():
            claim = next(iter(groups.values()))
            findings.append(f"answer says {claim}, {next(iter(returned.values()))}")
    return findings


def _states(lowered: str) -> dict[int, dict[int, str]]:
    """The states a ``lowered`` text asserts, by class and group (hedged or negated ones left
    out)."""
    found: dict[int, dict[int, str]] = {}
    for match in _STATE.finditer(lowered):
        start = match.start()
        if _hedged(lowered[max(0, start - 40) : start]):
            continue
        phrase = " ".join(match.group().split())
        for kind, group in _STATE_GROUPS[phrase]:
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
        lowered = value.lower().replace("_", " ")
        if (groups := _STATE_GROUPS.get(lowered)) is not None:
            yield from groups  # a status field's whole value: the common case
            return
        for match in _STATE.finditer(lowered):
            yield from _STATE_GROUPS[" ".join(match.group().split())]


def entities(values: ValueEvidence) -> list[str]:
    """The request, the tool calls' arguments and the answer name the same things: every id a
    tool was called with is one the request (or an earlier result) gave, every name argument
    is one the request says, and the answer names no place or thing the run never mentions."""
    evidence = values.evidence
    request = folded(evidence.request_text)
    findings = []
    for position, call in enumerate(evidence.calls):
        for key, value in call.arg_fields:
            if not isinstance(value, str | int) or isinstance(value, bool):
                continue
            text = str(value).strip()
            if problem := _argument_problem(key, text, request, evidence, position):
                findings.append(f"{call.name} was called with {key} {text!r}; {problem}")
    answer = evidence.answer
    for name in _named(answer):
        first = name.split()[0]
        if folded(first) in _NOT_NAMES:
            continue
        if not values.mentions(folded(first)):
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
    if not _names_entity(key) or not _is_name(text):
        return None
    if _CODE.fullmatch(text):
        # a code (a ticker, an airport) is compared with the codes the request writes: a name
        # the agent looked the code up by (Globex for GBX) tells nothing
        codes = {code.lower() for code in _CODE_IN_TEXT.findall(evidence.request_text)}
        if not codes or text.lower() in codes or text.lower() in _known(evidence, position):
            return None
        return f"the request names {', '.join(sorted(code.upper() for code in codes))}"
    words = [folded(word) for word in _WORD.findall(text.split(",")[0])]
    if not words or any(word in request for word in words):
        return None
    if not any(word in _known(evidence, position) for word in words):
        return "the request does not name it"
    # known from the system prompt, the context or an earlier result: fine, unless the
    # question names another such thing that neither the calls nor the answer ever use
    missing = _unused_names(evidence)
    return f"the request asks about {missing}" if missing else None


@lru_cache(maxsize=512)
def _names_entity(key: str) -> bool:
    """Whether an argument called ``key`` names a place, a person or a thing (cached: runs
    share their tools' argument names)."""
    return _ENTITY_ARG.search(key) is not None


def _unused_names(evidence: Evidence) -> str | None:
    """A place or thing the question names (``in Lyon``) that no call's arguments and not the
    answer mention: what the run should have been about and was not."""
    used = folded(" ".join([evidence.answer, *(call.args_text for call in evidence.calls)]))
    for name in _named(evidence.question):
        first = folded(name.split()[0])
        if first not in _NOT_NAMES and first not in used:
            return name
    return None


_CODE = re.compile(r"(?=[A-Z0-9]*[A-Z])[A-Z0-9]{2,6}")
"""A code written in capitals (``GBX``, ``LIS``, ``INTC2``)."""
_CODE_IN_TEXT = re.compile(r"(?<![\w-])(?=[A-Z0-9]*[A-Z])[A-Z][A-Z0-9]{1,5}(?![\w-])")


def _known(evidence: Evidence, position: int) -> str:
    """What the agent knew besides the request when it made call ``position``: the system
    prompt, the context and the earlier calls (folded; read only for a doubtful argument)."""
    earlier = " ".join(f"{c.args_text} {c.result_text}" for c in evidence.calls[:position])
    return folded(f"{evidence.system}\n{' '.join(evidence.context)}\n{earlier}")


_GROUPED_DIGITS = re.compile(r"(?<![\w-])\d{2,}(?:[ -]\d{2,})+(?![\w-])")
"""A number written in groups (``7731 0094 5521``): one id, looked up as its digits."""
_DIGIT_RUN = re.compile(r"\d+")
_NOT_DIGIT = re.compile(r"\D")


@lru_cache(maxsize=512)
def _ids(text: str) -> frozenset[str]:
    """Ids in ``text``, each as its letters and digits (``b755`` for ``B-755``) and as its
    digits when it has three or more (an order asked as ``NW-48213`` and looked up as
    ``48213``); a number written in groups also as all its digits. Digits with no letter and no
    run of three (``8-12``: a range of days) are no id."""
    found: set[str] = set()
    for token in IDS.findall(text):
        letters = any(char.isalpha() for char in token)
        if not letters and max(map(len, _DIGIT_RUN.findall(token))) < 3:
            continue
        digits = _NOT_DIGIT.sub("", token)
        if len(digits) >= 3:
            found.add(digits)
        if letters and len(digits) >= 2:
            found.add(_NOT_ALPHANUMERIC.sub("", token.lower()))
    for grouped in _GROUPED_DIGITS.findall(text):
        found.add(_NOT_DIGIT.sub("", grouped))
    return frozenset(found)


def _is_name(text: str) -> bool:
    """Capitalised words (``New York``, ``Jane Doe``, ``Acme Pro X2``), not a free-text query."""
    words = text.split()
    return 0 < len(words) <= 4 and all(word[:1].isupper() or word[:1].isdigit() for word in words)
