"""CPU per request of receiving an OTLP/HTTP body: tracescore's ``receive_body`` (a deadline per
chunk, the minimum rate, the readers' counts; ``tracescore/ingest/http.py``) against the plain
``request.stream()`` loop it replaced, in-process, the body in 64 KiB messages as uvicorn
delivers them. The end-to-end benchmark (``ingest.py``) cannot resolve a difference this small
on a shared machine; this one can.

    python benchmarks/body_receive.py
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request

from tracescore.ingest.http_bodies import BodyLimits, BodyReaders, receive_body

CHUNK = 64 * 1024


def _request(body: bytes) -> Request:
    parts = [body[start : start + CHUNK] for start in range(0, len(body), CHUNK)]

    async def receive() -> dict[str, object]:
        part = parts.pop(0)
        return {"type": "http.request", "body": part, "more_body": bool(parts)}

    headers = [(b"content-length", str(len(body)).encode())]
    return Request(
        {"type": "http", "method": "POST", "path": "/v1/traces", "headers": headers}, receive
    )


async def _stream(request: Request) -> bytes:
    """The loop before slow-client limits: read whatever comes, however slowly."""
    return b"".join([chunk async for chunk in request.stream()])


async def main() -> None:
    readers = BodyReaders(BodyLimits(16 << 20, 60.0, 16384, 256, 64, 64 * (16 << 20)))

    async def limited(request: Request) -> bytes:
        async with readers.reading("127.0.0.1") as reading:
            return await receive_body(request, reading)

    ways: dict[str, Callable[[Request], Awaitable[bytes]]] = {
        "stream()": _stream,
        "_receive_body": limited,
    }
    for size, label, count in (
        (150_000, "100-span request (~150 KB)", 3000),
        (1_700_000, "1000-span request (~1.7 MB)", 500),
    ):
        body = b"x" * size
        for _ in range(2):  # twice, alternating, to see the noise
            for name, way in ways.items():
                started = time.process_time()
                for _ in range(count):
                    await way(_request(body))
                print(
                    f"{label:28} {name:14} {(time.process_time() - started) / count * 1e6:7.1f} µs CPU"
                )


if __name__ == "__main__":
    asyncio.run(main())
