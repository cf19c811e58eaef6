"""The values a text states (numbers, amounts, percentages, dates, times, ids), normalised so that
the same value written two ways compares equal.

An answer rewrites what its evidence says: ``1234.5`` becomes ``$1,234.50``, ``21.4`` becomes
``about 21 °C`` or ``70 °F``, ``2026-03-05`` becomes ``March 5th``, ``14:30`` becomes
``2:30 pm``. A value is therefore kept as the set of readings it may have (``1.234`` is one
and a quarter or twelve hundred), and a number in the answer matches evidence when one of its
readings is within the rounding its digits show of a reading of the evidence, converted
between °C and °F, km and miles, kg and pounds, or percent and fraction.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan janvier janv enero ene januar gennaio janeiro",
            "february feb fevrier février febrero februar febbraio fevereiro",
            "march mar mars marzo märz maerz marco março",
            "april apr avril abril aprile",
            "may mai mayo maggio maio",
            "june jun juin junio juni giugno junho",
            "july jul juillet julio juli luglio julho",
            "august aug aout août agosto",
            "september sep sept septembre septiembre settembre setembro",
            "october oct octobre octubre oktober ottobre outubro",
            "november nov novembre noviembre novembre novembro",
            "december dec décembre decembre diciembre dezember dicembre dezembro",
        ),
        start=1,
    )
    for name in names.split()
}
_MONTH = r"[^\W\d_]{3,9}+"
"""A word that may be a month's name (looked up in :data:`MONTHS`: one alternation of every
name made the pattern several times slower). Possessive: what follows it in a date is no
letter, so giving letters back never makes a match, and not trying saves most of the
pattern's time on words that are no month."""
_DAY = r"(?P<{0}>[0-3]?\d)(?:st|nd|rd|th|er|º|°|\.)?"
_YEAR = r"(?P<{0}>(?:19|20)\d\d)"

DATES = re.compile(
    "|".join(
        (
            r"\b"
            + _YEAR.format("iy")
            + r"-(?P<im>[01]?\d)-(?P<id>[0-3]?\d)(?:[T ](?P<ih>[0-2]\d):(?P<imin>[0-5]\d)(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?\b",
            r"\b(?P<na>[0-3]?\d)[/.](?P<nb>[0-3]?\d)[/.](?P<ny>(?:19|20)?\d\d)\b",
            r"\b(?P<mm>"
            + _MONTH
            + r")\.?\s+"
            + _DAY.format("md")
            + r"(?:,?\s+"
            + _YEAR.format("my")
            + r")?\b",
            r"\b"
            + _DAY.format("dd")
            + r"(?:\s+(?:of|de))?\s+(?P<dm>"
            + _MONTH
            + r")\.?(?:,?\s+(?:de\s+)?"
            + _YEAR.format("dy")
            + r")?\b",
        )
    ),
    re.IGNORECASE,
)
TIMES = re.compile(
    r"\b(?P<h>[0-2]?\d)(?::(?P<m>[0-5]\d))?(?::[0-5]\d)?\s*(?P<ap>[ap]\.?\s?m\.?)(?![a-z])"
    r"|\b(?P<h24>[0-2]?\d)[:h](?P<m24>[0-5]\d)(?::[0-5]\d)?\b",
    re.IGNORECASE,
)
NUMBERS = re.compile(
    r"(?<![\w.])(?P<sign>[-−+])?(?P<digits>\d{1,3}(?:(?P<sep>[,.'’\u00a0\u202f\u2009 ])\d{3})(?:(?P=sep)\d{3})*(?:[.,]\d+)?|\d+(?:[.,]\d+)?)"
    r"(?P<unit>\s?(?:%|°\s?[cf]?|º\s?[cf]?|degrees?(?:\s(?:celsius|fahrenheit))?|k(?![a-z])|m(?![a-z])|bn|million|billion|thousand|km|mi(?:les?)?|kg|lbs?|pounds?)\b|\s?%)?",
    re.IGNORECASE,
)
IDS = re.compile(r"(?<![\w-])(?:[A-Za-z]{1,6}[-_#]?)?\d[\w-]*\d[\w-]*|#\d+")
"""Tokens that name something by a code holding digits (``ORD-48213``, ``#4821``, ``1Z999AA1``)."""
_APPROXIMATE = re.compile(
    r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|over|under|~|≈|some|close to|just|circa|ca\.|environ|unos|etwa|cerca de)\s*[$€£¥]?\s*$",
    re.IGNORECASE,
)
_CURRENCY_BEFORE = re.compile(r"[$€£¥₹]\s*$")
_CURRENCY_AFTER = re.compile(
    r"\s?(?:[$€£¥₹]|(?:usd|eur|gbp|chf|jpy|cad|aud|dollars?|euros?|pounds?)\b)", re.IGNORECASE
)
_RISE = (
    "up|rose|risen|rise|rising|gained|gain|climbed|jumped|increased|increase|grew|higher|sube|subió"
    "|subio|aumentó|aumento|hausse|augmenté|augmentation|gestiegen|steigt|plus"
)
_FALL = (
    "down|fell|fallen|fall|falling|dropped|drop|lost|loss|slipped|dipped|declined|decline|decreased"
    "|decrease|sank|lower|minus|baja|bajó|bajo|cayó|cae|caída|baisse|diminué|recul|gefallen|gesunken"
    "|sinkt"
)
DIRECTION_WORDS = frozenset(f"{_RISE}|{_FALL}".split("|"))
"""The words that say a number is a change up or down: where none is, no number has a
direction."""
_DIRECTION_BEFORE = re.compile(
    rf"\b(?:(?P<rise>{_RISE})|(?P<fall>{_FALL}))\s+(?:(?:by|of|de|du|um|un|en|about|around"
    r"|roughly|nearly|almost|some|another|a|an|d')\s+)*[+−-]?[$€£¥]?\s*$",
    re.IGNORECASE,
)
_DIRECTION_AFTER = re.compile(
    rf"\s?(?:%|percent|per\s?cent|points?|pts)?\s*(?:(?P<rise>{_RISE})|(?P<fall>{_FALL}))\b",
    re.IGNORECASE,
)
_MULTIPLIERS = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}
_DIGIT = re.compile(r"\d")
SMALL = 12.0
"""Bare whole numbers up to this (a list's ``3 steps``, ``top 5``, ``24/7``'s halves) are not
claims worth checking: too common in answers, too often right by chance."""


class Number(NamedTuple):
    """A number as written: its possible readings, the rounding its digits show, and its unit
    (a tuple: an answer's numbers are built on every run, and a frozen dataclass takes three
    times as long to build)."""

    text: str
    start: int
    readings: tuple[float, ...]
    tolerance: float
    unit: str
    before: str
    """The text just before it, where an ``about`` makes it approximate."""
    after: str
    """The text just after it (a currency's code, ``increase``)."""

    @property
    def approximate(self) -> bool:
        return _APPROXIMATE.search(self.before) is not None

    @property
    def bare(self) -> bool:
        """A whole number with no unit and no currency: a count, a year or a day (``2026``,
        ``the 15th``), which a date's digits may back."""
        return (
            not self.unit
            and self.tolerance == 0.5
            and not _CURRENCY_BEFORE.search(self.before)
            and not _CURRENCY_AFTER.match(self.after)
        )

    @property
    def direction(self) -> int:
        """1 for a rise (``up 3 %``, ``a 3 % increase``), -1 for a fall (``down 3 %``,
        ``fell by 3``), 0 when the words around it say neither."""
        match = _DIRECTION_BEFORE.search(self.before) or _DIRECTION_AFTER.match(self.after)
        return 0 if match is None else 1 if match["rise"] else -1


@dataclass(slots=True)
class Values:
    """Everything a text states, each kind normalised for comparison."""

    numbers: list[Number] = field(default_factory=list)
    dates: set[tuple[int, int]] = field(default_factory=set)
    """``(month, day)``: a year is too often left out of an answer to demand it."""
    date_texts: list[tuple[str, set[tuple[int, int]]]] = field(default_factory=list)
    times: set[int] = field(default_factory=set)
    """Minutes past midnight."""
    time_texts: list[tuple[str, set[int]]] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)


def _readings(digits: str, separator: str | None) -> tuple[tuple[float, ...], float]:
    """Each value ``digits`` may stand for, and half its last shown digit's place."""
    if not separator:  # no thousands separator: no space of any kind in the digits either
        if "," in digits or "." in digits:
            whole_part, _, decimals = digits.replace(",", ".").partition(".")
            return (float(f"{whole_part}.{decimals}"),), 0.5 * 10.0 ** -len(decimals)
        return (float(digits),), 0.5
    digits = digits.replace("\u00a0", " ").replace("\u202f", " ").replace("\u2009", " ")
    separator = {"\u00a0": " ", "\u202f": " ", "\u2009": " ", "’": "'"}.get(separator, separator)
    grouped, _, decimals = (
        digits.replace(separator, "").rpartition("," if separator == "." else ".")
        if ("," if separator == "." else ".") in digits
        else (digits.replace(separator, ""), "", "")
    )
    whole = float(grouped) if decimals == "" else float(f"{grouped}.{decimals}")
    readings = [whole]
    if separator in ",." and digits.count(separator) == 1 and decimals == "":
        readings.append(float(digits.replace(separator, ".")))  # 1.234: maybe 1 and a bit
    places = len(decimals)
    return tuple(readings), 0.5 * 10.0**-places


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    """Whether ``position`` is within one of ``spans`` (a loop: ``any`` over a generator costs a
    frame per call)."""
    for start, end in spans:  # noqa: SIM110
        if start <= position < end:
            return True
    return False


def numbers(text: str, taken: list[tuple[int, int]] | None = None) -> list[Number]:
    """The numbers of ``text`` outside the ``taken`` spans (its dates and times)."""
    found = []
    for match in NUMBERS.finditer(text):
        start, end = match.span()
        if taken and _inside(start, taken):
            continue
        digits, separator, unit_text, sign = match.group("digits", "sep", "unit", "sign")
        readings, tolerance = _readings(digits, separator)
        unit = unit_text.strip().lower() if unit_text else ""
        if unit in _MULTIPLIERS:
            scale = _MULTIPLIERS[unit]
            readings = (*readings, *(value * scale for value in readings))
            tolerance *= scale
        if sign == "-" or sign == "−":
            readings = (*readings, *(-value for value in readings))
        found.append(
            Number(
                match.group(),
                start,
                readings,
                tolerance,
                unit,
                text[max(0, start - 24) : start],
                text[end : end + 16],
            )
        )
    return found


_CALENDAR = re.compile(
    r"\b(?:19|20)\d\d-[01]\d-[0-3]\d(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?"
    r"|\b[0-2]?\d:[0-5]\d(?::[0-5]\d)?\b|\b[0-3]?\d[/.][01]?\d[/.](?:19|20)?\d\d\b"
)
"""Dates and times written with digits only (``2026-03-07T09:14``, ``14:30``, ``07/03/2026``):
their digits are a calendar's, no quantity's."""
_CALENDAR_MARK = re.compile(r"\d[-:/]\d|\d\.\d\d?\.\d")


@dataclass(slots=True)
class Readings:
    """What a text's numbers may stand for, as evidence (no position, rounding or unit kept)."""

    values: list[float] = field(default_factory=list)
    calendar: list[float] = field(default_factory=list)
    """The numbers of its dates and times (a year, a month, a day, an hour): evidence for a
    bare whole number only (``2026``, ``the 15th``), never for a quantity (``10 %``, ``3 kg``)."""


def readings_of(text: str) -> Readings:
    """Every reading of every number in ``text``, its dates' and times' apart."""
    found = Readings()
    if not _DIGIT.search(text):
        return found
    spans: list[tuple[int, int]] = []
    if _CALENDAR_MARK.search(text):
        for match in _CALENDAR.finditer(text):
            spans.append(match.span())
            found.calendar.extend(float(part) for part in _DIGITS.findall(match.group()))
    values = found.values
    for match in NUMBERS.finditer(text):
        if spans and _inside(match.start(), spans):
            continue
        digits, separator, unit, sign = match.group("digits", "sep", "unit", "sign")
        readings, _ = _readings(digits, separator)
        if unit and (scale := _MULTIPLIERS.get(unit.strip().lower())):
            readings = (*readings, *(value * scale for value in readings))
        values.extend(readings)
        if sign:
            values.extend(-value for value in readings)
    return found


_DIGITS = re.compile(r"\d+")


def is_claim(number: Number) -> bool:
    """Whether ``number`` states something worth checking (not a small bare count)."""
    value = number.readings[0]
    return bool(number.unit) or value > SMALL or value != int(value)


def _date_keys(match: re.Match[str]) -> set[tuple[int, int]]:
    if match["im"]:
        return {(int(match["im"]), int(match["id"]))}
    if match["na"]:
        first, second = int(match["na"]), int(match["nb"])
        return {(first, second), (second, first)}  # 05/03: May 3rd or 5 March
    month = MONTHS.get((match["mm"] or match["dm"]).lower())
    return {(month, int(match["md"] or match["dd"]))} if month else set()


def _minutes(match: re.Match[str]) -> set[int]:
    if match["h24"] is not None:
        hour, minute = int(match["h24"]), int(match["m24"])
        return {hour * 60 + minute, (hour % 12) * 60 + minute, (hour % 12 + 12) * 60 + minute}
    hour, minute = int(match["h"]) % 12, int(match["m"] or 0)
    afternoon = match["ap"].lower().startswith("p")
    return {(hour + 12 * afternoon) * 60 + minute}


_NOT_KEY = re.compile(r"[^0-9a-z]")


def _id_key(token: str) -> str:
    return _NOT_KEY.sub("", token.lower())


def values_of(text: str) -> Values:
    """Every value ``text`` states: dates and times first, so that their digits are not read
    again as numbers."""
    found = Values()
    if not _DIGIT.search(text):
        return found  # every value holds a digit (a date's day, a time's hour)
    taken = _dates_and_times(text, found)
    found.numbers = numbers(text, taken)
    found.ids = ids_of(text, taken)
    return found


def dates_and_times(text: str) -> Values:
    """The dates and times of ``text`` only (what evidence needs when the answer has some)."""
    found = Values()
    if _DIGIT.search(text):
        _dates_and_times(text, found)
    return found


def _dates_and_times(text: str, found: Values) -> list[tuple[int, int]]:
    """Adds ``text``'s dates and times to ``found``; returns where they are."""
    taken: list[tuple[int, int]] = []
    for match in DATES.finditer(text) if _may_hold_date(text) else ():
        keys = {key for key in _date_keys(match) if 1 <= key[0] <= 12 and 1 <= key[1] <= 31}
        if keys:
            found.dates |= keys
            found.date_texts.append((match.group(), keys))
            taken.append(match.span())
            if match["ih"]:
                found.times.add(int(match["ih"]) * 60 + int(match["imin"]))
    for match in TIMES.finditer(text) if _may_hold_time(text) else ():
        if _inside(match.start(), taken):
            continue
        minutes = _minutes(match)
        found.times |= minutes
        found.time_texts.append((match.group(), minutes))
        taken.append(match.span())
    return taken


_NUMERIC_DATE_MARK = re.compile(r"\d-\d|\d/\d|\d\.\d{1,2}\.\d")
_NAME = re.compile(r"[^\W\d_]{3,}")
_TIME_MARK = re.compile(r"\d[:hH]\d|\d\s?[aApP]\.?[mM]")
"""Cases spelled out: the same matches as ignoring case (none of these letters has another
case form), found faster."""
_ID_MARK = re.compile(r"[A-Za-z][-_#]?\d|\d[A-Za-z]|#\d")


def _may_hold_date(text: str) -> bool:
    """A cheap look for what every date form has (``3-5``, ``3/5``, a month's name): the full
    pattern costs several times more, and most texts hold no date."""
    if _NUMERIC_DATE_MARK.search(text) is not None:
        return True
    return not MONTHS.keys().isdisjoint(_NAME.findall(text.lower()))


def _may_hold_time(text: str) -> bool:
    return _TIME_MARK.search(text) is not None


def ids_of(text: str, taken: list[tuple[int, int]] | None = None) -> set[str]:
    """The ids of ``text`` (outside the ``taken`` spans), normalised: lowercase, no separators."""
    if _ID_MARK.search(text) is None:
        return set()  # every id has a letter or ``#`` next to a digit
    return {
        _id_key(match.group())
        for match in IDS.finditer(text)
        if _has_letters_and_digits(match.group()) and not (taken and _inside(match.start(), taken))
    }


def _has_letters_and_digits(token: str) -> bool:
    return any(c.isalpha() for c in token) and sum(c.isdigit() for c in token) >= 2


@lru_cache(maxsize=256)
def cached_dates_and_times(text: str) -> Values:
    """``dates_and_times`` for text runs repeat (a system prompt, a help-center article)."""
    return dates_and_times(text)


@lru_cache(maxsize=256)
def cached_readings(text: str) -> Readings:
    """``readings_of`` for text runs repeat."""
    return readings_of(text)


def _near(number: Number, evidence: list[float], share: float) -> bool:
    """A reading of ``number`` within its rounding, or ``share`` of itself, of the evidence's."""
    for reading in number.readings:
        slack = max(number.tolerance, abs(reading) * share) + 1e-9
        if _within(evidence, reading, slack):
            return True
    return False


def _within(evidence: list[float], value: float, slack: float) -> bool:
    """Whether sorted ``evidence`` holds a value within ``slack`` of ``value``."""
    at = bisect_left(evidence, value - slack)
    return at < len(evidence) and evidence[at] <= value + slack


_TEMPERATURE = ((9 / 5, 32.0), (5 / 9, -32.0 * 5 / 9))
"""``(factor, offset)`` pairs: °C to °F and back."""
_CONVERSIONS: dict[str, tuple[tuple[float, float], ...]] = {
    "°": _TEMPERATURE,
    "º": _TEMPERATURE,
    "deg": _TEMPERATURE,
    "km": ((0.621371, 0.0),),
    "mi": ((1 / 0.621371, 0.0),),
    "kg": ((2.20462, 0.0),),
    "lb": ((1 / 2.20462, 0.0),),
    "po": ((1 / 2.20462, 0.0),),
    "%": ((100.0, 0.0), (0.01, 0.0)),
}
"""The conversions an answer's unit allows, by the unit's first letters: a bare number is
compared as it is (converting everything would let fabricated numbers match by chance)."""


def matches(number: Number, evidence: Readings, converted: bool = True) -> bool:
    """Whether ``number`` is one of the ``evidence`` readings (sorted), as rounded or (unless
    not ``converted``) converted; a bare whole number may also be one of its dates' or times'
    numbers."""
    found = evidence.values
    if _near(number, found, 0.01) or (number.approximate and _near(number, found, 0.1)):
        return True
    if not converted:
        return False
    unit = number.unit
    for factor, offset in _CONVERSIONS.get(unit[:2]) or _CONVERSIONS.get(unit[:1]) or ():
        for reading in number.readings:
            # value * factor + offset within max(1, 2 %) of the reading, solved for value
            slack = max(1.0, abs(reading) * 0.02) / factor
            if _within(found, (reading - offset) / factor, slack + 1e-9):
                return True
    return number.bare and _near(number, evidence.calendar, 0.0)
