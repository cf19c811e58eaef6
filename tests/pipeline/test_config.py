"""The ``scorers:`` section (``tracescore/pipeline/config.py``) as a config file is read: each
mistake named by its key and line."""

from __future__ import annotations

import pytest

from tracescore.config import ConfigError, parse_config


def test_config_errors_name_the_bad_key_and_line() -> None:
    text = (
        "judges:\n  cheap: {model: openai/gpt-4o-mini}\n"
        "scorers:\n"
        "  - {name: a, scorer: 'tests.support.custom_scorers:answer_present'}\n"
        "  - {name: b, scorer: faithfulnes}\n"
        "  - {name: c, scorer: 'tests.support.custom_scorers:answer_present', judge: pricey}\n"
        "  - {name: d, scorer: 'tests.support.custom_scorers:answer_present', sampling: {rate: 2}}\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "bad.yaml")
    message = str(caught.value)
    assert "scorers.3.sampling.rate (line 7)" in message
    with pytest.raises(ConfigError) as caught:
        parse_config(text.replace(", sampling: {rate: 2}", ""), "bad.yaml")
    message = str(caught.value)
    assert "scorers.1.scorer (line 5): unknown scorer 'faithfulnes'" in message
    assert "scorers.2.judge (line 6): no judge named 'pricey'" in message
