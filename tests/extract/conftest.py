"""Fixtures of the extraction tests (the sources of a run judged by LLM scorers): the scripted judge server and a judge on it."""

from tests.support.judge_fixtures import judge, server  # noqa: F401 - fixtures served to this folder
