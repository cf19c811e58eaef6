"""A real OTLP/HTTP receiver on loopback that keeps what it is sent, for export tests."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.support.server_process import wait_for
from tracescore.ingest.decode import decode_logs, decode_traces
from tracescore.spans import LogRecord, Span


class OTLPReceiver:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.logs: list[LogRecord] = []
        self.lock = threading.Lock()
        self.endpoint = ""

    def wait_for(self, *, spans: int = 0, logs: int = 0, timeout: float = 10.0) -> None:
        def enough() -> bool:
            with self.lock:
                return len(self.spans) >= spans and len(self.logs) >= logs

        wait_for(
            enough,
            timeout,
            lambda: f"{spans} spans, {logs} logs (received {len(self.spans)}, {len(self.logs)})",
            every=0.05,
        )


@contextmanager
def otlp_receiver() -> Iterator[OTLPReceiver]:
    receiver = OTLPReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            is_json = "json" in (self.headers.get("Content-Type") or "")
            if self.path == "/v1/traces":
                decoded, reply = decode_traces(body, json=is_json), ExportTraceServiceResponse()
                with receiver.lock:
                    receiver.spans.extend(decoded.spans)
            elif self.path == "/v1/logs":
                decoded, reply = decode_logs(body, json=is_json), ExportLogsServiceResponse()
                with receiver.lock:
                    receiver.logs.extend(decoded.logs)
            else:
                self.send_response(404)
                self.end_headers()
                return
            payload = reply.SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
