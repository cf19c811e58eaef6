"""The deployment files (compose, Dockerfile, Collector and replica configs) agree with each other.

There is no container engine on the test machines, so these tests read the files the way the
engines would and check what a typo would silently break: the gateway's resolver must name the
replicated service and its gRPC port, every pipeline must use components that are defined, the
replica config must validate against tracescore's own schema and point at the compose database.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from sqlalchemy import create_engine

from tests.support.paths import REPO
from tracescore.config import Config, parse_config
from tracescore.pipeline.bindings import compile_bindings

COMPOSE_FILE = REPO / "docker-compose.yml"
GATEWAY_FILE = REPO / "collector" / "gateway.yaml"
REPLICA_CONFIG_FILE = REPO / "collector" / "tracescore.yaml"
DOCKERFILE = REPO / "Dockerfile"
CONFIG_IN_IMAGE = "/etc/tracescore/config.yaml"


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _load(COMPOSE_FILE)


@pytest.fixture(scope="module")
def gateway() -> dict[str, Any]:
    return _load(GATEWAY_FILE)


@pytest.fixture(scope="module")
def replica_config() -> Config:
    return parse_config(REPLICA_CONFIG_FILE.read_text(encoding="utf-8"), str(REPLICA_CONFIG_FILE))


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines()]
    pairs = [line.split(None, 1) for line in lines if line and not line.startswith("#")]
    return [(words[0].upper(), words[1] if len(words) > 1 else "") for words in pairs]


def _instructions(dockerfile: list[tuple[str, str]], name: str) -> list[str]:
    return [arguments for instruction, arguments in dockerfile if instruction == name]


def _exec_form(arguments: str) -> list[str]:
    return yaml.safe_load(arguments)  # a JSON array is a YAML flow sequence


def _container_ports(service: dict[str, Any]) -> set[int]:
    """Ports a service offers to the compose network: ``expose`` plus targets of ``ports``."""
    ports = {int(str(port)) for port in service.get("expose", [])}
    ports |= {
        int(str(mapping).rsplit(":", 1)[-1].split("/")[0]) for mapping in service.get("ports", [])
    }
    return ports


def _mounted_file(service: dict[str, Any], target: str) -> Path:
    for volume in service.get("volumes", []):
        source, destination, *_ = volume.split(":")
        if destination == target:
            return (REPO / source).resolve()
    raise AssertionError(f"nothing is mounted at {target}")


# --- docker-compose.yml --------------------------------------------------------------------------


def test_compose_has_database_replicas_gateway_and_trace_ui(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) >= {"postgres", "tracescore", "gateway", "jaeger"}
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["gateway"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert services["jaeger"]["image"].startswith("jaegertracing/jaeger:")
    assert services["tracescore"]["deploy"]["replicas"] >= 2
    assert services["tracescore"]["build"] == "."


def test_replicas_can_scale(compose: dict[str, Any]) -> None:
    """Fixed names or host ports would make a second replica fail to start."""
    replica = compose["services"]["tracescore"]
    assert "container_name" not in replica
    assert "ports" not in replica
    assert _container_ports(replica) == {4317, 4318}


def test_applications_reach_the_gateway_and_people_reach_the_ui(compose: dict[str, Any]) -> None:
    published = {
        name: {str(mapping).split(":")[0] for mapping in service.get("ports", [])}
        for name, service in compose["services"].items()
    }
    assert published["gateway"] == {"4317", "4318"}
    assert published["jaeger"] == {"16686"}
    assert published["postgres"] == set()


def test_compose_start_order_waits_for_health(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["tracescore"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "pg_isready" in services["postgres"]["healthcheck"]["test"]
    assert services["gateway"]["depends_on"]["tracescore"]["condition"] == "service_healthy"


def test_mounted_configs_exist(compose: dict[str, Any], gateway: dict[str, Any]) -> None:
    services = compose["services"]
    assert _mounted_file(services["tracescore"], CONFIG_IN_IMAGE) == REPLICA_CONFIG_FILE
    gateway_args = services["gateway"]["command"]
    [config_path] = [arg.split("=", 1)[1] for arg in gateway_args if arg.startswith("--config=")]
    assert _mounted_file(services["gateway"], config_path) == GATEWAY_FILE


def _compose_command() -> list[str] | None:
    """``docker compose`` (the v2 plugin) if installed, else a standalone ``docker-compose``."""
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


def test_compose_cli_accepts_the_file(compose: dict[str, Any]) -> None:
    """``compose config`` parses and validates the file against the Compose schema; no engine needed."""
    command = _compose_command()
    if command is None:
        pytest.skip(
            "neither the docker compose plugin nor docker-compose is installed "
            "(`docker compose version` fails), so the Compose CLI cannot validate the file"
        )
    run = subprocess.run(
        [*command, "--file", str(COMPOSE_FILE), "config", "--services"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr
    assert set(run.stdout.split()) == set(compose["services"])


# --- collector/tracescore.yaml (every replica) --------------------------------------------------


def test_replicas_share_the_compose_database(
    compose: dict[str, Any], replica_config: Config
) -> None:
    url = urlsplit(replica_config.store.url)
    database = compose["services"]["postgres"]["environment"]
    assert url.scheme == "postgresql+psycopg"
    assert (url.hostname, url.port) == ("postgres", 5432)
    assert url.username == database["POSTGRES_USER"]
    assert url.password == database["POSTGRES_PASSWORD"]
    assert url.path.lstrip("/") == database["POSTGRES_DB"]


def test_replicas_listen_where_the_compose_file_says(
    compose: dict[str, Any], replica_config: Config
) -> None:
    server = replica_config.server
    assert server.host == "0.0.0.0"
    assert {server.grpc_port, server.http_port} == _container_ports(
        compose["services"]["tracescore"]
    )


def test_replica_scorers_compile(replica_config: Config, sqlite_url: str) -> None:
    """What ``tracescore serve`` does at start: a binding missing required options stops it."""
    engine = create_engine(sqlite_url)
    try:
        bindings = compile_bindings(replica_config.scorers, dict(replica_config.judges), engine)
    finally:
        engine.dispose()
    assert [b.name for b in bindings] == [b.name for b in replica_config.scorers]
    assert bindings


def test_replicas_export_scores_to_the_gateway_evaluations_receiver(
    replica_config: Config, gateway: dict[str, Any]
) -> None:
    export = urlsplit(replica_config.export.otlp_endpoint or "")
    assert replica_config.export.protocol == "http/protobuf"
    assert (export.scheme, export.hostname) == ("http", "gateway")
    receiver = gateway["receivers"]["otlp/evaluations"]["protocols"]["http"]["endpoint"]
    assert export.port == int(receiver.rsplit(":", 1)[1])


# --- collector/gateway.yaml ----------------------------------------------------------------------

PIPELINE_PARTS = ("receivers", "processors", "exporters")


def test_every_pipeline_uses_defined_components(gateway: dict[str, Any]) -> None:
    used: dict[str, set[str]] = {section: set() for section in PIPELINE_PARTS}
    for name, pipeline in gateway["service"]["pipelines"].items():
        assert name.split("/")[0] in {"traces", "logs", "metrics"}, name
        assert pipeline["receivers"] and pipeline["exporters"], name
        for section in PIPELINE_PARTS:
            for component in pipeline.get(section, []):
                assert component in gateway[section], f"{name} uses undefined {component}"
                used[section].add(component)
    for section in PIPELINE_PARTS:
        assert used[section] == set(gateway[section]), f"{section} defined but never used"
    assert set(gateway["service"]["extensions"]) == set(gateway["extensions"])


def test_memory_limiter_comes_first_and_batch_follows(gateway: dict[str, Any]) -> None:
    for name, pipeline in gateway["service"]["pipelines"].items():
        assert pipeline["processors"][:2] == ["memory_limiter", "batch"], name


def test_spans_and_logs_are_routed_by_trace_id(gateway: dict[str, Any]) -> None:
    pipelines = gateway["service"]["pipelines"]
    balancer = gateway["exporters"]["loadbalancing"]
    assert balancer["routing_key"] == "traceID"
    assert "loadbalancing" in pipelines["traces"]["exporters"]
    assert "loadbalancing" in pipelines["logs"]["exporters"]
    # Routing by traceID is not defined for metrics; they must never reach the balancer.
    metric_exporters = {
        e for n, p in pipelines.items() if n.startswith("metrics") for e in p["exporters"]
    }
    assert metric_exporters == {"debug"}


def test_resolver_names_the_replicated_service_and_its_grpc_port(
    gateway: dict[str, Any], compose: dict[str, Any], replica_config: Config
) -> None:
    resolver = gateway["exporters"]["loadbalancing"]["resolver"]
    assert set(resolver) == {"dns"}, "exactly one resolver"
    replicated = {
        n for n, s in compose["services"].items() if s.get("deploy", {}).get("replicas", 1) > 1
    }
    assert resolver["dns"]["hostname"] in replicated
    assert resolver["dns"]["port"] == replica_config.server.grpc_port
    backend = gateway["exporters"]["loadbalancing"]["protocol"]["otlp"]
    assert "endpoint" not in backend, "the resolver sets each backend's endpoint"
    assert backend["tls"]["insecure"] is True  # the replicas serve plain gRPC


def test_spans_fan_out_to_jaeger_too(gateway: dict[str, Any], compose: dict[str, Any]) -> None:
    jaeger = gateway["exporters"]["otlp/jaeger"]
    host, port = jaeger["endpoint"].rsplit(":", 1)
    assert host == "jaeger" and int(port) in _container_ports(compose["services"]["jaeger"])
    assert "otlp/jaeger" in gateway["service"]["pipelines"]["traces"]["exporters"]


def test_applications_receiver_listens_on_the_published_ports(
    gateway: dict[str, Any], compose: dict[str, Any]
) -> None:
    protocols = gateway["receivers"]["otlp"]["protocols"]
    ports = {int(protocols[p]["endpoint"].rsplit(":", 1)[1]) for p in ("grpc", "http")}
    published = {int(str(m).split(":")[0]) for m in compose["services"]["gateway"]["ports"]}
    assert ports == published == {4317, 4318}


def test_evaluation_results_never_loop_back_into_tracescore(
    gateway: dict[str, Any], compose: dict[str, Any]
) -> None:
    """tracescore's own output goes to Jaeger through a receiver of its own, not the balancer."""
    pipelines = gateway["service"]["pipelines"]
    receiving = [p for p in pipelines.values() if "otlp/evaluations" in p["receivers"]]
    assert {e for p in receiving for e in p["exporters"]} == {"otlp/jaeger", "debug"}
    assert all(p["receivers"] == ["otlp/evaluations"] for p in receiving)
    endpoint = gateway["receivers"]["otlp/evaluations"]["protocols"]["http"]["endpoint"]
    assert int(endpoint.rsplit(":", 1)[1]) in _container_ports(compose["services"]["gateway"])


# --- Dockerfile and .dockerignore ---------------------------------------------------------------


def test_image_is_slim_python_running_as_a_user(dockerfile: list[tuple[str, str]]) -> None:
    """The wheel is built in a stage with a compiler; the image is slim Python with the wheel."""
    assert _instructions(dockerfile, "FROM") == ["python:3.11-slim AS build", "python:3.11-slim"]
    users = _instructions(dockerfile, "USER")
    assert users and users[-1] not in {"root", "0"}
    runs = [shlex.split(run) for run in _instructions(dockerfile, "RUN")]
    assert any("gcc" in run for run in runs)
    assert ["pip", "wheel", "--no-deps", "--wheel-dir", "/wheels", "."] in runs
    # The wheel with its judges extra (litellm), which a plain `pip install .` leaves out.
    assert ["pip", "install", "$(echo /wheels/*.whl)[judges]", "&&", "rm", "-rf", "/wheels"] in runs
    assert "--from=build /wheels /wheels" in _instructions(dockerfile, "COPY")


def test_image_serves_the_mounted_config(dockerfile: list[tuple[str, str]]) -> None:
    [entrypoint] = _instructions(dockerfile, "ENTRYPOINT")
    [command] = _instructions(dockerfile, "CMD")
    argv = _exec_form(entrypoint) + _exec_form(command)
    # The image listens on every interface of the container, explicitly (the default is loopback).
    assert argv == ["tracescore", "serve", "--config", CONFIG_IN_IMAGE, "--host", "0.0.0.0"]


def test_image_exposes_otlp_and_probes_healthz(
    dockerfile: list[tuple[str, str]], replica_config: Config
) -> None:
    exposed = {int(port) for line in _instructions(dockerfile, "EXPOSE") for port in line.split()}
    assert exposed == {4317, 4318}
    [healthcheck] = _instructions(dockerfile, "HEALTHCHECK")
    assert f"http://127.0.0.1:{replica_config.server.http_port}/healthz" in healthcheck


def test_build_context_keeps_what_pip_install_needs(dockerfile: list[tuple[str, str]]) -> None:
    ignored = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    # What is copied from the build context (not from the build stage).
    sources = [
        shlex.split(c)[:-1]
        for c in _instructions(dockerfile, "COPY")
        if not c.startswith("--from=")
    ]
    copied = {source for sources_of_one in sources for source in sources_of_one}
    assert {"pyproject.toml", "README.md", "tracescore"} <= copied
    for source in copied:
        assert (REPO / source).exists(), source
        assert not any(fnmatch(source, pattern) for pattern in ignored), source
