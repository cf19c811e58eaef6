"""API keys on every surface of a real ``tracescore serve``, and secrets kept out of its log.

One server runs with a key in the config, a second key in ``TRACESCORE_API_KEYS`` and a judge
key in the environment variable its judge config names; requests with no key, a wrong key and
each right key hit OTLP/HTTP, OTLP/gRPC, the REST API, ``/metrics`` and the dashboard. The
judge answers garbage so scoring fails and logs errors: the place a careless message would
leak a credential. Then the whole server log is searched for every secret.
"""

from __future__ import annotations

import base64
import random
import secrets
from collections.abc import Iterator

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.judge_server import JudgeServer, text_reply
from tests.support.server_process import ServerProcess, start_server, wait_for
from tracescore.auth import (
    API_KEYS_ENV,
    ApiKeys,
    PasswordKeys,
    basic_credentials,
    bearer_token,
    matches,
    with_environment_keys,
)
from tracescore.config import Config, ConfigError, parse_config

CONFIG_KEY = f"tsk-config-{secrets.token_hex(12)}"
ENV_KEY = f"tsk-env-{secrets.token_hex(12)}"
JUDGE_KEY = f"sk-judge-{secrets.token_hex(12)}"
WRONG_KEY = f"tsk-wrong-{secrets.token_hex(12)}"
JUDGE_KEY_ENV = "TRACESCORE_TEST_JUDGE_KEY"
PROTOBUF = {"Content-Type": "application/x-protobuf"}
GUARDED_GETS = [
    "/api/traces",
    "/api/scores",
    "/api/scores/summary",
    "/api/coverage",
    "/api/alerts",
    "/metrics",
    "/ui/live",
]
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        server.default = text_reply("this is not the JSON the scorer asked for")
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, judge: JudgeServer) -> Iterator[ServerProcess]:
    config = {
        "server": {"api_keys": [CONFIG_KEY]},
        "judges": {
            "default": {
                "model": "openai/judge",
                "api_base": judge.base_url,
                "api_key_env": JUDGE_KEY_ENV,
                "max_retries": 0,
            }
        },
        "scorers": [{"name": "relevancy", "scorer": "answer-relevancy"}],
        "workers": {"poll_interval": 0.05},
    }
    env = {API_KEYS_ENV: f" {ENV_KEY} ,", JUDGE_KEY_ENV: JUDGE_KEY}
    with start_server(tmp_path_factory.mktemp("auth"), config=config, env=env) as process:
        yield process


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        yield http


def test_healthz_needs_no_key(client: httpx.Client) -> None:
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {},
        _bearer(WRONG_KEY),
        {"Authorization": CONFIG_KEY},
        {"Authorization": f"Basic {CONFIG_KEY}"},
        _bearer(CONFIG_KEY[:-1]),
    ],
)
def test_otlp_http_without_a_valid_bearer_key_is_401_and_stores_nothing(
    client: httpx.Client, headers: dict[str, str]
) -> None:
    trace = agent_trace(random.Random(1))
    response = client.post(
        "/v1/traces", content=export_request(trace.spans), headers={**PROTOBUF, **headers}
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert (
        client.get(f"/api/traces/{trace.trace_id}", headers=_bearer(CONFIG_KEY)).status_code == 404
    )


@pytest.mark.parametrize("key", [CONFIG_KEY, ENV_KEY], ids=["config", "environment"])
def test_otlp_http_accepts_the_config_key_and_the_environment_key(
    client: httpx.Client, key: str
) -> None:
    trace = agent_trace(random.Random(key))
    response = client.post(
        "/v1/traces", content=export_request(trace.spans), headers={**PROTOBUF, **_bearer(key)}
    )
    assert response.status_code == 200, response.text
    stored = client.get(f"/api/traces/{trace.trace_id}", headers=_bearer(key))
    assert stored.status_code == 200
    assert stored.json()["summary"]["span_count"] == len(trace.spans)


def test_otlp_grpc_is_unauthenticated_without_a_valid_key(server: ServerProcess) -> None:
    body = export_request(agent_trace(random.Random(2)).spans)
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        export = channel.unary_unary(
            TRACE_EXPORT, request_serializer=None, response_deserializer=None
        )
        for metadata in [(), (("authorization", f"Bearer {WRONG_KEY}"),)]:
            with pytest.raises(grpc.RpcError) as refused:
                export(body, metadata=metadata, timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        export(body, metadata=(("authorization", f"Bearer {ENV_KEY}"),), timeout=10)


def _sdk_spans(name: str) -> list[ReadableSpan]:
    captured = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(captured))
    with provider.get_tracer("tests.auth").start_as_current_span(name):
        pass
    return list(captured.get_finished_spans())


def test_sdk_exporters_authenticate_with_their_headers_option(
    server: ServerProcess, client: httpx.Client
) -> None:
    """What users configure: ``OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer <key>``."""
    exporters = {
        "http": lambda key: HttpSpanExporter(
            endpoint=f"{server.base_url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
        ),
        "grpc": lambda key: GrpcSpanExporter(
            endpoint=server.grpc_endpoint,
            insecure=True,
            headers=(("authorization", f"Bearer {key}"),),
        ),
    }
    for transport, exporter_with in exporters.items():
        refused, accepted = _sdk_spans(f"{transport} refused"), _sdk_spans(f"{transport} accepted")
        for key, spans, outcome in [
            (WRONG_KEY, refused, SpanExportResult.FAILURE),
            (CONFIG_KEY, accepted, SpanExportResult.SUCCESS),
        ]:
            exporter = exporter_with(key)
            assert exporter.export(spans) == outcome, transport
            exporter.shutdown()
        for spans, status in [(refused, 404), (accepted, 200)]:
            trace_id = format(spans[0].context.trace_id, "032x")
            assert (
                client.get(f"/api/traces/{trace_id}", headers=_bearer(ENV_KEY)).status_code
                == status
            )


@pytest.mark.parametrize("path", GUARDED_GETS)
def test_rest_api_metrics_and_live_feed_need_a_key(client: httpx.Client, path: str) -> None:
    assert client.get(path).status_code == 401
    assert client.get(path, headers=_bearer(WRONG_KEY)).status_code == 401
    assert client.get(path, headers=_bearer(CONFIG_KEY)).status_code == 200
    assert client.get(path, headers=_bearer(ENV_KEY)).status_code == 200


def test_dashboard_sends_strangers_to_the_login_and_serves_key_holders(
    client: httpx.Client,
) -> None:
    refused = client.get("/", headers=_bearer(WRONG_KEY))
    assert refused.status_code == 303
    assert refused.headers["location"].startswith("/ui/login")
    assert client.get("/", headers=_bearer(ENV_KEY)).status_code == 200


def _score_errors(client: httpx.Client) -> list[dict]:
    page = client.get("/api/scores", params={"status": "error"}, headers=_bearer(CONFIG_KEY))
    return list(page.json()["items"])


def test_no_secret_reaches_the_server_log(
    client: httpx.Client, server: ServerProcess, judge: JudgeServer
) -> None:
    trace = agent_trace(random.Random(3))
    body = export_request(trace.spans)
    for key in (WRONG_KEY, CONFIG_KEY):
        client.post("/v1/traces", content=body, headers={**PROTOBUF, **_bearer(key)})
    client.post("/ui/login", data={"key": WRONG_KEY, "next": "/"})
    failed = wait_for(lambda: _score_errors(client), 90.0, "a judge failure scored")[0]
    assert failed["error"], failed
    assert judge.count > 0  # the judge was called (with its key) and its failure was logged
    log = server.output()
    for secret in (CONFIG_KEY, ENV_KEY, JUDGE_KEY, WRONG_KEY):
        assert secret not in log


def test_config_errors_never_echo_a_secret() -> None:
    secret = f"sk-{secrets.token_hex(16)}"
    broken = [
        f'server:\n  api_keys: ["{secret}"\n  http_port: 1\n',  # YAML syntax error on its line
        f"server:\n  api_keys: [{secret}]\n\tgrpc_port: 1\n",  # a tab PyYAML would quote
        f"server:\n  api_keys: {secret}\n",  # a string where a list belongs
        f"server:\n  api_keys: [{secret}]\n  http_port: {secret}\n",
        f"judges:\n  default: {{model: openai/x, api_key: {secret}}}\n",  # keys are not config
        f'store: "postgresql://u:{secret}@db/x"\nserver: {{http_port: -1}}\n',
    ]
    for text in broken:
        with pytest.raises(ConfigError) as error:
            parse_config(text, "tracescore.yaml")
        assert "tracescore.yaml" in str(error.value)
        assert secret not in str(error.value)


def test_keys_compare_whole_and_exact() -> None:
    keys = ApiKeys(["alpha-key", "beta-key"])
    assert keys.valid_authorization("Bearer beta-key") and keys.valid_authorization(
        "bearer  alpha-key "
    )
    for header in [
        "",
        "Bearer",
        "Bearer alpha",
        "Bearer alpha-key2",
        "alpha-key",
        "Token alpha-key",
    ]:
        assert not keys.valid_authorization(header), header
    assert ApiKeys([]).valid_authorization("")  # no keys configured: open
    assert bearer_token("Bearer  x ") == "x" and bearer_token("Basic x") is None
    assert matches("b", ["a", "b"]) and not matches("c", ["a", "b"]) and not matches("a", [])


def test_basic_auth_passwords_are_keys_only_where_password_keys_guard() -> None:
    """The Langfuse path's scheme: ``Basic base64(public key:secret key)``, the secret a key."""

    def basic(credentials: str) -> str:
        return "Basic " + base64.b64encode(credentials.encode()).decode()

    assert basic_credentials(basic("pk-lf-1:sk:with:colons")) == ("pk-lf-1", "sk:with:colons")
    assert basic_credentials(basic("pk-lf-1:clé")) == ("pk-lf-1", "clé")
    for header in [basic("no-colon"), basic("pk:"), "Basic ???", "Basic", "Bearer x", ""]:
        assert basic_credentials(header) is None, header
    assert basic_credentials("Basic " + base64.b64encode(b"pk:\xff").decode()) is None
    keys = PasswordKeys(["beta-key"])
    assert keys.valid_authorization(basic("anything:beta-key"))
    assert keys.valid_authorization("Bearer beta-key")
    for header in [basic("beta-key:pk"), basic("pk:beta"), basic("pk:beta-key2"), "beta-key", ""]:
        assert not keys.valid_authorization(header), header
    assert not ApiKeys(["beta-key"]).valid_authorization(basic("pk:beta-key"))
    assert PasswordKeys([]).valid_authorization("")  # no keys configured: open


def test_environment_keys_join_the_configured_ones() -> None:
    config = Config.model_validate({"server": {"api_keys": ["one"]}})
    merged = with_environment_keys(config, {API_KEYS_ENV: "two, one ,,three"})
    assert merged.server.api_keys == ["one", "two", "three"]
    assert config.server.api_keys == ["one"]
    assert with_environment_keys(config, {}) is config
