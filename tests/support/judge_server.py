"""A scripted OpenAI-compatible judge: a real HTTP server on 127.0.0.1 for tests and benchmarks.

litellm talks to it through its whole request path (``model="openai/<name>"`` with ``api_base``),
so retries, timeouts, structured output and token accounting are exercised for real, without the
network. Replies come from scripts keyed by a substring of the request body: a step's JSON schema
title (it appears in ``response_format`` and in the prompt) or any marker in the prompt.

    with JudgeServer() as server:
        server.script("FaithfulnessClaims", json_reply({"claims": ["a", "b"]}))
        server.script("FaithfulnessVerdicts", error_reply(429, retry_after=0.2),
                      json_reply({"verdicts": [...]}))
        judge = JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url)

A script's replies are served in order and its last reply repeats. Unmatched requests get
``server.default`` (plain text). ``POST /v1/embeddings`` answers each input with
``server.embed(text)``: by default a hashed bag of its words (:func:`word_vector`), so texts
that share words get close vectors, as a real embedding model's would. It can also run as a process for benchmarks:
``python -m tests.support.judge_server --script script.json --delay 0.2`` prints its base URL.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LLAMA_CPP_JSON_SCHEMA_ERROR = (
    'response_format type must be one of "text" or "json_object", but got: json_schema'
)


@dataclass
class Reply:
    """One scripted answer: a chat completion with ``content``, or an error status."""

    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = ""
    delay: float = 0.0
    hang: bool = False
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens)


def json_reply(value: Any, *, delay: float = 0.0) -> Reply:
    return Reply(content=json.dumps(value), delay=delay)


def text_reply(text: str, *, delay: float = 0.0) -> Reply:
    return Reply(content=text, delay=delay)


def error_reply(status: int, *, retry_after: float | None = None, message: str = "") -> Reply:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return Reply(status=status, headers=headers, error=message or f"scripted {status}")


def hang_reply() -> Reply:
    """Accept the request and never answer (until the server stops)."""
    return Reply(hang=True)


@dataclass
class _Script:
    match: str
    replies: list[Reply]
    served: int = 0

    def next(self) -> Reply:
        reply = self.replies[min(self.served, len(self.replies) - 1)]
        self.served += 1
        return reply


class JudgeServer:
    """``POST /v1/chat/completions`` answered from scripts; counts and keeps every request."""

    def __init__(self, *, delay: float = 0.0, reject_json_schema: bool = False) -> None:
        self.delay = delay
        self.reject_json_schema = reject_json_schema
        """Answer 400 to ``response_format: json_schema`` like llama.cpp's server does."""
        self.default = text_reply("A scripted reason.")
        self.embed: Callable[[str], list[float]] = word_vector
        self.embedded: list[str] = []
        """Every text ``/v1/embeddings`` was asked to embed, in order."""
        self.requests: list[dict[str, Any]] = []
        self.received_at: list[float] = []
        """When each chat request arrived (``time.time()``), in order."""
        self.in_flight = 0
        self.max_in_flight = 0
        """Most requests the server was answering at one moment (checks concurrency limits)."""
        self.busy_seconds = 0.0
        """Summed time spent answering requests (how busy clients kept the judge)."""
        self._scripts: list[_Script] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def script(self, match: str, *replies: Reply) -> None:
        """Serve ``replies`` (in order, the last repeating) to requests whose body holds ``match``.

        A later script for the same ``match`` replaces the earlier one; when several scripts
        match a request, the most recently added answers.
        """
        with self._lock:
            self._scripts = [s for s in self._scripts if s.match != match]
            self._scripts.append(_Script(match, list(replies)))

    def start(self) -> JudgeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, delta: int, busy: float = 0.0) -> None:
        with self._lock:
            self.in_flight += delta
            self.busy_seconds += busy
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _choose(self, raw: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.received_at.append(time.time())
            fmt = (body.get("response_format") or {}).get("type")
            if self.reject_json_schema and fmt == "json_schema":
                return error_reply(400, message=LLAMA_CPP_JSON_SCHEMA_ERROR)
            for script in reversed(self._scripts):
                if script.match in raw:
                    return script.next()
            return self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                """``GET /stats``: request count, busy seconds and peak concurrency."""
                with server._lock:
                    stats = {
                        "count": len(server.requests),
                        "busy_seconds": server.busy_seconds,
                        "max_in_flight": server.max_in_flight,
                    }
                self._send(200, stats, {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                if self.path.endswith("/embeddings"):
                    body = json.loads(raw)
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    with server._lock:
                        server.embedded.extend(texts)
                    vectors = [server.embed(text) for text in texts]
                    self._send(200, _embeddings(body.get("model", "embed"), vectors), {})
                    return
                started = time.perf_counter()
                server._track(1)
                body = json.loads(raw)
                try:
                    self._answer(server._choose(raw, body), body)
                finally:
                    server._track(-1, time.perf_counter() - started)

            def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
                if reply.hang:
                    server._stopping.wait()
                    return
                time.sleep(server.delay + reply.delay)
                if reply.status != 200:
                    payload = {
                        "error": {"message": reply.error, "type": "scripted", "code": reply.status}
                    }
                    self._send(reply.status, payload, reply.headers)
                    return
                prompt = "".join(str(m.get("content", "")) for m in body.get("messages", []))
                usage = reply.usage or (max(1, len(prompt) // 4), max(1, len(reply.content) // 4))
                self._send(200, _completion(body.get("model", "judge"), reply.content, usage), {})

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


EMBEDDING_DIMENSIONS = 256


def word_vector(text: str) -> list[float]:
    """A deterministic stand-in for an embedding: each lower-cased word of five letters or more
    (the short ones are mostly function words) adds 1 to a dimension chosen by its hash (the
    same on every run, unlike Python's ``hash``)."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"[^\W\d_]{5,}", text.lower()):
        digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest())
        vector[digest % EMBEDDING_DIMENSIONS] += 1.0
    return vector


def _embeddings(model: str, vectors: list[list[float]]) -> dict[str, Any]:
    return {
        "object": "list",
        "model": model,
        "data": [
            {"object": "embedding", "index": index, "embedding": vector}
            for index, vector in enumerate(vectors)
        ],
        "usage": {"prompt_tokens": len(vectors), "total_tokens": len(vectors)},
    }


def _completion(model: str, content: str, usage: tuple[int, int]) -> dict[str, Any]:
    prompt_tokens, completion_tokens = usage
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def load_script_file(server: JudgeServer, path: str) -> None:
    """Scripts from JSON: ``{"<match>": [<json value to return>, ...], ...}``."""
    with open(path, encoding="utf-8") as fh:
        scripts: dict[str, list[Any]] = json.load(fh)
    for match, values in scripts.items():
        server.script(match, *(json_reply(v) for v in values))


def main(argv: list[str] | None = None, ready: Callable[[str], None] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", help="JSON file of scripts: {match: [reply values]}")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    server = JudgeServer(delay=args.delay)
    if args.script:
        load_script_file(server, args.script)
    server.start()
    (ready or print)(server.base_url)
    sys.stdout.flush()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
