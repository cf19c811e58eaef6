"""Fuzzing in benchmark mode: the suite's properties with many more cases, and a long hostile
session against a real ``tracescore serve``.

1. In-process: ``tests/ingest/test_fuzz_decode.py`` with ``TRACESCORE_FUZZ_SCALE`` (default 10, so
   100,000 cases instead of the suite's 10,000) — decode, truncate, store encoding, extraction.
2. Over the wire: ``--http`` hostile OTLP/HTTP requests (JSON, protobuf, damaged, gzip, wrong
   types) and ``--grpc`` hostile OTLP/gRPC exports against one server. Prints the answers by
   status, requests that got none, the server's peak RSS, and whether it logged a traceback.

    python benchmarks/fuzz.py [--scale 10] [--http 5000] [--grpc 1000]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import grpc
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.otlp_fuzz import ALLOWED_STATUSES, Hostile, hostile_request
from tests.support.overload import proc_status_mb
from tests.support.server_process import start_server

REPO = Path(__file__).resolve().parent.parent
SUITE_CASES = 10_000
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def in_process(scale: float) -> None:
    started = time.perf_counter()
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/ingest/test_fuzz_decode.py",
        ],
        cwd=REPO,
        env={**os.environ, "TRACESCORE_FUZZ_SCALE": str(scale)},
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    summary = (
        completed.stdout.strip().splitlines()[-1]
        if completed.stdout.strip()
        else completed.stderr[-500:]
    )
    print(
        f"in-process: {SUITE_CASES * scale:,.0f} generated requests through decode → truncate → "
        f"store encoding → extraction in {elapsed:.1f} s: {summary}",
        flush=True,
    )
    if completed.returncode:
        print(completed.stdout[-4000:])


def over_the_wire(http_cases: int, grpc_cases: int, seed: int) -> None:
    rng = random.Random(seed)
    statuses: Counter[int] = Counter()
    unexpected: list[str] = []
    no_answer = 0
    with tempfile.TemporaryDirectory(prefix="tracescore-fuzz-") as workdir:
        config = {"server": {"max_attribute_chars": 1000, "max_body_bytes": 256 * 1024}}
        with start_server(Path(workdir), config=config, scoring_processes=None) as server:
            started = time.perf_counter()
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                for _ in range(http_cases):
                    path, body, headers = hostile_request(rng)
                    try:
                        response = client.post(path, content=body, headers=headers)
                    except httpx.TransportError:
                        no_answer += 1
                        continue
                    statuses[response.status_code] += 1
                    if response.status_code not in ALLOWED_STATUSES:
                        unexpected.append(f"{response.status_code} {response.text[:200]}")
            http_elapsed = time.perf_counter() - started
            codes: Counter[str] = Counter()
            with grpc.insecure_channel(server.grpc_endpoint) as channel:
                export = channel.unary_unary(
                    TRACE_EXPORT, request_serializer=None, response_deserializer=None
                )
                for _ in range(grpc_cases):
                    try:
                        export(Hostile(rng).protobuf_traces(), timeout=30)
                        codes["OK"] += 1
                    except grpc.RpcError as error:
                        codes[error.code().name] += 1
            peak = proc_status_mb(server.process.pid, "VmHWM")
            healthy = httpx.get(f"{server.base_url}/healthz", timeout=5).status_code == 200
            tracebacks = server.output().count("Traceback")
    print(
        f"over HTTP: {http_cases} hostile requests in {http_elapsed:.1f} s: {dict(sorted(statuses.items()))}, "
        f"no answer {no_answer}, outside {sorted(ALLOWED_STATUSES)}: {len(unexpected)}",
        flush=True,
    )
    for line in unexpected[:10]:
        print(f"  unexpected: {line}")
    print(f"over gRPC: {grpc_cases} hostile exports: {dict(codes)}")
    print(
        f"server: peak RSS {peak:.0f} MiB, healthy afterwards: {healthy}, tracebacks logged: {tracebacks}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scale", type=float, default=10.0, help="times the suite's 10,000 in-process cases"
    )
    parser.add_argument("--http", type=int, default=5000)
    parser.add_argument("--grpc", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    in_process(args.scale)
    over_the_wire(args.http, args.grpc, args.seed)


if __name__ == "__main__":
    main()
