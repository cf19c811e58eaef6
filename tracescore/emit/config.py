"""The ``export:`` section: where scores are re-emitted, kept next to the emitter that reads it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tracescore.settings import Section


class ExportConfig(Section):
    """Where scores are re-emitted as OpenTelemetry ``gen_ai.evaluation.result`` events."""

    otlp_endpoint: str | None = None
    protocol: Literal["http/protobuf", "grpc"] = "http/protobuf"
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(10.0, gt=0)
    batch_delay: float = Field(1.0, gt=0)
    """Seconds the exporters wait to batch evaluations before sending them."""
