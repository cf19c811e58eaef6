"""The REST API's one shape, shared by every part that serves routes under ``/api``.

- Versions: the routes are served under ``/api/v1``; the unversioned ``/api/…`` paths they
  grew under stay for a release as deprecated aliases answering in their old shapes
  (:data:`LEGACY`), so existing clients keep working while they move.
- One time format: ``since``/``until`` take an ISO 8601 time (no offset: UTC), epoch seconds
  or a duration back from now (``90s``, ``15m``, ``1h``, ``7d``), through :func:`parse_moment`.
- One parsing layer: every parameter is read into the range its query can hold before it
  reaches one (:data:`Moment`, :data:`DurationParam`, :data:`RowId`, :data:`Finite`,
  :class:`Body`); what is outside is a 422 naming the parameter, never a 500 from the database
  or from Python's integers and datetimes.
- One list envelope: ``{"items": [...], "next_cursor": ...}`` (:meth:`ApiVersion.page`), and
  a ``limit``/``cursor`` pair on every list (:data:`Window` for the lists built whole).
- One time format in answers: RFC 3339 in UTC with ``Z`` (:mod:`tracescore.times`); a number is a
  time only where its name says so (``*_ns``).
- One error body: RFC 9457 problem details (:func:`install_problem_details`).

A leaf module (it imports only :mod:`tracescore.settings` and :mod:`tracescore.cursors`), so
every layer can use it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, BeforeValidator, Field, WithJsonSchema, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from tracescore.cursors import cursor_int, decode_cursor, encode_cursor
from tracescore.settings import parse_duration

PROBLEM_MEDIA_TYPE = "application/problem+json"
MOMENT_HELP = (
    "an ISO 8601 time (UTC without an offset), epoch seconds, or a duration back from now (1h, 7d)"
)


@dataclass(frozen=True, slots=True)
class ApiVersion:
    """Where a version's routes are mounted and which response shapes they keep."""

    prefix: str
    legacy: bool
    """The unversioned aliases: deprecated in the schema, list bodies under their old keys."""

    def page(
        self, items: list[Any], legacy_key: str, next_cursor: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """A list body: ``{"items", "next_cursor", **extra}``; under the old paths the items
        stay under ``legacy_key`` (``traces``, ``feedback``...) as they always were."""
        if self.legacy and legacy_key != "items":
            return {**extra, legacy_key: items}
        return {**extra, "items": items, "next_cursor": next_cursor}

    def router(self, path: str, tag: str) -> APIRouter:
        """A router of this version's routes under ``path``: on the deprecated aliases marked
        deprecated in the schema, and routes whose every answer says so in its headers
        (:class:`DeprecatedRoute`)."""
        return APIRouter(
            prefix=f"{self.prefix}{path}",
            tags=[tag],
            deprecated=self.legacy or None,
            route_class=DeprecatedRoute if self.legacy else APIRoute,
        )

    @property
    def listing(self) -> dict[int | str, dict[str, Any]]:
        """The ``responses`` of a list route: the envelope, documented (not on the aliases,
        whose old shapes differ route by route)."""
        return (
            {}
            if self.legacy
            else {
                200: {
                    "description": "a page of the list",
                    "content": {"application/json": {"schema": _PAGE_SCHEMA}},
                }
            }
        )


_PAGE_SCHEMA = {
    "type": "object",
    "required": ["items", "next_cursor"],
    "properties": {
        "items": {"type": "array", "items": {"type": "object"}},
        "next_cursor": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "pass back as cursor for the next page; null on the last page",
        },
    },
}


T = TypeVar("T")
MAX_WINDOW = 1000
"""The longest page of a list built whole in memory."""


@dataclass(frozen=True, slots=True)
class Window:
    """The page a client asked for of a list the route builds whole (sources, silences, the
    quarantine, the review queue...): short lists, so an offset in the cursor is exact and a
    page costs nothing more than the list. Gives these lists the same ``limit``/``cursor``
    as the keyset-paged ones, so ``limit=abc`` is a 422 everywhere instead of ignored."""

    limit: int
    offset: int

    @property
    def end(self) -> int:
        """How many items of the whole list this page needs, and one to know there are more."""
        return self.offset + self.limit + 1

    def cut(self, items: Sequence[T]) -> tuple[list[T], str | None]:
        """This page of ``items`` and the cursor of the next one (None on the last)."""
        page = list(items[self.offset : self.offset + self.limit])
        more = len(items) > self.offset + self.limit
        return page, encode_cursor(str(self.offset + self.limit)) if more else None


def _window(
    limit: Annotated[int, Query(ge=1, le=MAX_WINDOW, description="items in the page")] = 100,
    cursor: Annotated[str | None, Query(description="the previous page's next_cursor")] = None,
) -> Window:
    try:
        offset = cursor_int(decode_cursor(cursor, 1)[0]) if cursor else 0
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return Window(limit, offset)


WindowParam = Annotated[Window, Depends(_window)]
"""A list route's ``limit`` and ``cursor``, for a list built whole (:class:`Window`)."""


DEPRECATED_AT = datetime(2026, 11, 27, 16, 5, 41, tzinfo=UTC)
"""When the ``/api/v1`` routes came and the unversioned paths became their aliases."""


class DeprecatedRoute(APIRoute):
    """A route of a deprecated ``/api/...`` alias: every answer it gives carries RFC 9745's
    ``Deprecation`` (the date the alias was deprecated, as a structured-field date) and
    RFC 8288's ``Link`` to the ``/api/v1`` route that replaces it, so a client's logs say what
    to move to. A route class rather than a dependency: the routes that answer a Response of
    their own (the trace documents) get the headers too."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            response = await handler(request)
            successor = f"{V1.prefix}{request.url.path.removeprefix(LEGACY.prefix)}"
            response.headers["Deprecation"] = f"@{int(DEPRECATED_AT.timestamp())}"
            response.headers["Link"] = f'<{successor}>; rel="successor-version"'
            return response

        return answer


V1 = ApiVersion("/api/v1", legacy=False)
LEGACY = ApiVersion("/api", legacy=True)
VERSIONS = (V1, LEGACY)


EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2262, 4, 11, tzinfo=UTC)
"""The times a parameter may name: span times are nanoseconds since the epoch in a signed
64-bit integer (stored so), which ends on 2262-04-11; before the epoch nothing was stored."""
_OUT_OF_RANGE = f"out of range: times from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d}"


def parse_moment(text: str, now: datetime | None = None) -> datetime:
    """A time in UTC from ``text``: ISO 8601, epoch seconds (a bare number) or a duration with
    a unit back from ``now``, between :data:`EARLIEST` and :data:`LATEST`. A bare number is
    epoch seconds, never a duration: ``/api/traces`` always took epoch seconds there.
    ValueError names the three forms, or the range."""
    text = text.strip()
    try:
        epoch = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(epoch) and 0 <= epoch <= LATEST.timestamp():
            return datetime.fromtimestamp(epoch, UTC)
        raise ValueError(f"epoch seconds {_OUT_OF_RANGE}")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
        try:
            moment = moment.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00:00+01:00 is in year 0 in UTC
            raise ValueError(_OUT_OF_RANGE) from None
        if not EARLIEST <= moment <= LATEST:
            raise ValueError(_OUT_OF_RANGE)
        return moment
    try:
        back = parse_duration(text)
    except ValueError:
        raise ValueError(f"not {MOMENT_HELP}") from None
    now = now or datetime.now(UTC)
    if not back <= (now - EARLIEST).total_seconds():  # also inf, from 400 digits
        raise ValueError(f"{text} back from now is {_OUT_OF_RANGE}")
    return now - timedelta(seconds=back)


def _moment(value: object) -> object:
    return parse_moment(value) if isinstance(value, str) else value


Moment = Annotated[
    datetime,
    BeforeValidator(_moment),
    WithJsonSchema({"type": "string", "examples": ["2026-05-04T12:00:00Z", "1746360000", "1h"]}),
]
"""A ``since``/``until`` parameter: any form :func:`parse_moment` reads."""


def moment_query(what: str) -> Any:
    """The ``Query`` of a ``since``/``until`` parameter, documented the same everywhere."""
    return Query(description=f"{what}: {MOMENT_HELP}")


LONGEST = (LATEST - EARLIEST).total_seconds()
"""The longest duration a parameter may name: longer spans no stored time."""


def _duration(value: object) -> float:
    seconds = parse_duration(value)
    if not 0 < seconds <= LONGEST:  # also NaN and inf
        raise ValueError(f"out of range: durations above 0 up to {LONGEST:.0f}s")
    return seconds


DurationParam = Annotated[
    float,
    BeforeValidator(_duration),
    WithJsonSchema({"type": "string", "examples": ["1h", "15m", "1d"]}),
]
"""A duration parameter (``90s``, ``15m``, ``1h``, ``7d``, or seconds), in seconds."""

RowId = Annotated[int, Field(ge=1, le=2**63 - 1)]
"""A stored row's integer id: the databases' BIGINT keys cannot bind a larger one."""

Finite = Annotated[float, Field(allow_inf_nan=False)]
"""A number parameter: ``nan`` and ``inf`` are no threshold or value."""

TRACE_ID_PATTERN = r"^[0-9a-fA-F]{32}$"
SPAN_ID_PATTERN = r"^[0-9a-fA-F]{16}$"
TraceId = Annotated[
    str, Field(pattern=TRACE_ID_PATTERN, examples=["4bf92f3577b34da6a3ce929d0e0e4736"])
]
"""A trace id parameter (in a path or a query): a malformed one is a 422 problem naming it,
like every bad parameter, not a 400 or a 404."""
SpanId = Annotated[str, Field(pattern=SPAN_ID_PATTERN, examples=["00f067aa0ba902b7"])]
"""A span id parameter, likewise."""
FeedbackId = Annotated[
    str, Field(pattern=r"^[0-9a-f]{32}$", examples=["5c5f09670fb9455390ed367ef572e9f7"])
]
"""A verdict's id as ``POST /feedback`` answered it (32 lowercase hex)."""
GroupId = Annotated[str, Field(pattern=r"^[0-9A-Za-z_-]{1,64}$", examples=["9f86d081884c7d65"])]
"""A failure mode's id (16 hex from a pass): anything else cannot name one."""


def _unstorable(text: str) -> str | None:
    """Why the databases cannot store ``text``, or None: PostgreSQL refuses a NUL in text, and
    neither database takes an unpaired surrogate (UTF-8 cannot encode one)."""
    if "\x00" in text:
        return "holds a NUL character"
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "holds an unpaired surrogate"
    return None


class Body(BaseModel):
    """A request body: a string in it (a key too, at any depth) that no database can store is a
    422 naming where it is, before any query is made. (A query string's NUL is read as the
    U+FFFD stored text holds instead: see ``web.gate.NulAsStored``.)"""

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        pending: list[tuple[str, Any]] = [("", data)]
        while pending:  # a loop, not recursion: a body may nest deeper than Python's stack
            where, value = pending.pop()
            if isinstance(value, dict):
                for key, item in value.items():
                    pending.append((f"{where}.{key}" if where else str(key), key))
                    pending.append((f"{where}.{key}" if where else str(key), item))
            elif isinstance(value, list):
                pending.extend((f"{where}[{index}]", item) for index, item in enumerate(value))
            elif isinstance(value, str) and (why := _unstorable(value)) is not None:
                raise ValueError(f"{where or 'body'} {why}, which cannot be stored")
        return data


API_TAGS = [
    {
        "name": "otlp",
        "description": "OTLP/HTTP export: where instrumented agents send spans, "
        "log records and metrics (gRPC on its own port).",
    },
    {"name": "traces", "description": "Stored traces and the runs rebuilt from them."},
    {"name": "monitoring", "description": "Scores, their statistics, coverage and alerts."},
    {"name": "feedback", "description": "Human verdicts, calibration and the review queue."},
    {"name": "conversations", "description": "Multi-turn conversations and their scores."},
    {"name": "sources", "description": "What tracescore made of each instrumentation library."},
    {"name": "ingest", "description": "The ingest journal's quarantined requests."},
    {"name": "health", "description": "Liveness."},
]
"""The schema's groups, in the order the documentation pages show them."""
API_DESCRIPTION = (
    "Routes are served under `/api/v1`; the unversioned `/api/...` paths are deprecated aliases "
    "kept for one release in their old shapes. `since`/`until` take ISO 8601, epoch seconds or "
    "a duration back from now (`1h`); answers give every time as RFC 3339 in UTC with `Z` (a "
    "number is a time only where its name ends in `_ns`); every list takes `limit` and `cursor` "
    "and answers `{items, next_cursor}`; errors are RFC 9457 problem details; the old paths "
    'answer with `Deprecation` and `Link: <…/api/v1/…>; rel="successor-version"` headers.'
)


class FieldError(BaseModel):
    """One invalid part of a request, as pydantic located it (``["query", "limit"]``)."""

    loc: list[str | int]
    msg: str
    type: str


class Problem(BaseModel):
    """RFC 9457 problem details: the body of every error under ``/api``."""

    type: str = Field("about:blank", examples=["about:blank"])
    title: str = Field(examples=["Not Found"])
    status: int = Field(examples=[404])
    detail: str = Field(examples=["trace 4bf92f3577b34da6a3ce929d0e0e4736 not found"])
    errors: list[FieldError] | None = None
    """Only on 422 for a request that failed validation: each invalid parameter or field."""


_PROBLEM_CONTENT = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "description": what, "content": _PROBLEM_CONTENT}
    for status, what in {
        401: "no valid API key (when keys are configured)",
        404: "nothing with this id",
        408: "the request body was not received in time",
        410: "the trace's spans were removed by retention; its scores are kept",
        413: "the request body is larger than server.max_api_body_bytes",
        422: "a parameter, path id or body field failed validation (each listed in ``errors``)",
        429: "too many wrong keys from this address; see Retry-After",
        503: "the database is unavailable; see Retry-After",
    }.items()
}
"""The error answers every API route may give, documented once for all of them."""


def problem_body(status: int, detail: str, **extensions: Any) -> dict[str, Any]:
    """An RFC 9457 problem details body (``type`` is ``about:blank``: the status says it all)."""
    return {
        "type": "about:blank",
        "title": _title(status),
        "status": status,
        "detail": detail,
        **extensions,
    }


def problem(
    status: int, detail: str, headers: Mapping[str, str] | None = None, **extensions: Any
) -> JSONResponse:
    """:func:`problem_body` as a response."""
    body = jsonable_encoder(problem_body(status, detail, **extensions))
    return JSONResponse(body, status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def install_problem_details(app: FastAPI) -> None:
    """Errors under ``/api`` answer as problem details; the dashboard's pages keep FastAPI's
    handling (their 303 to the login form is an HTTPException too)."""

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if not _api(request) or exc.status_code < 400:
            return await http_exception_handler(request, exc)
        detail = exc.detail if isinstance(exc.detail, str) else _title(exc.status_code)
        if exc.status_code == 422:  # the shape of a request that failed validation
            return problem(422, detail, exc.headers, errors=[_error_of(request, detail)])
        return problem(exc.status_code, detail, headers=exc.headers)

    async def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        if not _api(request):
            return await request_validation_exception_handler(request, exc)
        errors = [
            {
                "loc": list(error.get("loc", ())),
                "msg": error.get("msg", ""),
                "type": error.get("type", ""),
            }
            for error in exc.errors()
        ]
        detail = "; ".join(
            f"{'.'.join(map(str, e['loc'][1:])) or e['loc'][0]}: {e['msg']}" for e in errors
        )
        return problem(422, detail or "the request is not valid", errors=errors)

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)


def _error_of(request: Request, detail: str) -> dict[str, Any]:
    """A route's own 422 (a check past the parameters' types: ``since`` after ``until``, a
    cursor it did not give) as one of the ``errors`` a validation failure lists, located at
    the parameter its detail names first (``limit: at most 1000``) where the request has it."""
    name = detail.split(":", 1)[0].split(" ", 1)[0]
    where = next(
        (
            [place, name]
            for place, params in (("query", request.query_params), ("path", request.path_params))
            if name in params
        ),
        [],
    )
    return {"loc": where, "msg": detail, "type": "value_error"}


def _api(request: Request) -> bool:
    return request.url.path.startswith("/api/")
