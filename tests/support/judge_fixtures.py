"""The scripted judge server and a judge on it, served by conftest to the folders using them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.judge_server import JudgeServer
from tracescore.judge import JudgeConfig, LiteLLMJudge


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


@pytest.fixture
def judge(server: JudgeServer) -> LiteLLMJudge:
    """A judge on the scripted server, without a verdict cache so tests can re-script a step."""
    config = JudgeConfig(
        model="openai/gpt-4o-mini",
        api_base=server.base_url,
        backoff_base=0.01,
        timeout=10,
        cache=False,
    )
    return LiteLLMJudge(config)
