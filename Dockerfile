# tracescore collector and scoring workers, one process per container.
#
# Build:  docker build -t tracescore .
# Run:    docker run -p 4317:4317 -p 4318:4318 tracescore
#         (the image's default config keeps a SQLite file in /var/lib/tracescore; mount your
#         own at /etc/tracescore/config.yaml, as docker-compose.yml does, to use PostgreSQL)

# The wheel is built where a C compiler is (the tone scorer's loops are compiled), and only the
# wheel goes into the image.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
# Only what the wheel needs, so editing tests or docs does not invalidate this layer.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY tracescore ./tracescore
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # litellm would otherwise fetch its model price map from the network at import time.
    LITELLM_LOCAL_MODEL_COST_MAP=True

COPY --from=build /wheels /wheels
# With the judges extra (litellm): an image is a whole deployment, LLM judges included.
RUN pip install "$(echo /wheels/*.whl)[judges]" && rm -rf /wheels

RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/tracescore --create-home tracescore \
 && mkdir -p /etc/tracescore \
 && printf 'store: sqlite:////var/lib/tracescore/tracescore.db\n' > /etc/tracescore/config.yaml

USER tracescore
WORKDIR /var/lib/tracescore

# 4317: OTLP/gRPC, 4318: OTLP/HTTP (also /healthz and /metrics).
EXPOSE 4317 4318

# python:3.11-slim has no curl; the standard library is enough for a liveness probe.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:4318/healthz', timeout=2)"]

ENTRYPOINT ["tracescore"]
# Every interface of the container (tracescore's own default is loopback): `docker run -p`
# decides what is reachable from outside. Set api_keys (or TRACESCORE_API_KEYS) before
# publishing the ports beyond the host.
CMD ["serve", "--config", "/etc/tracescore/config.yaml", "--host", "0.0.0.0"]
