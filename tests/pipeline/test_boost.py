"""Alert-driven sampling (issue 37, item 3): the rate a binding samples at while its boost's
alert fires, the cached read of the firing state, and the start-time validation of
``sampling.boost``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tracescore.config import ConfigError, parse_config
from tracescore.pipeline.boost import Boosts, boosted_rate, ceiling_rate
from tracescore.pipeline.config import SamplingConfig, ScorerBinding

BOOSTED = SamplingConfig.model_validate({"rate": 0.1, "boost": {"rate": 1.0, "while": "bad"}})


def test_the_boost_rate_applies_only_while_its_rule_fires() -> None:
    assert boosted_rate(BOOSTED, [], "support") == 0.1
    assert boosted_rate(BOOSTED, [{}], "support") == 1.0  # an unsplit rule boosts every run
    assert boosted_rate(BOOSTED, [{}], None) == 1.0
    assert ceiling_rate(BOOSTED, []) == 0.1
    assert ceiling_rate(BOOSTED, [{"agent": "sales"}]) == 1.0


def test_a_rule_split_by_agent_boosts_that_agent_only() -> None:
    firing = [{"agent": "sales"}, {"agent": "billing", "model": "gpt-4o"}]
    assert boosted_rate(BOOSTED, firing, "sales") == 1.0
    assert boosted_rate(BOOSTED, firing, "billing") == 1.0
    assert boosted_rate(BOOSTED, firing, "support") == 0.1
    assert boosted_rate(BOOSTED, firing, None) == 0.1


def test_a_boost_never_lowers_the_rate_and_no_boost_keeps_it() -> None:
    lower = SamplingConfig.model_validate({"rate": 0.5, "boost": {"rate": 0.2, "while": "bad"}})
    assert boosted_rate(lower, [{}], "support") == 0.5
    plain = SamplingConfig(rate=0.3)
    assert boosted_rate(plain, [{}], "support") == 0.3
    assert ceiling_rate(plain, [{}]) == 0.3


class Reads:
    """A firing-state reader that counts its reads and answers what the test set."""

    def __init__(self) -> None:
        self.calls = 0
        self.firing: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, rules: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        self.calls += 1
        return {rule: self.firing[rule] for rule in rules if rule in self.firing}


def test_the_firing_state_is_read_at_most_once_per_interval() -> None:
    binding = ScorerBinding.model_validate(
        {"name": "judge", "scorer": "completeness", "sampling": BOOSTED.model_dump(by_alias=True)}
    )
    reads = Reads()
    now = [100.0]
    boosts = Boosts([binding], reads, interval=3.0, clock=lambda: now[0])
    assert boosts.active
    boosts.refresh()
    assert boosts.ceiling(binding) == 0.1
    reads.firing = {"bad": [{"agent": "sales"}]}
    for _ in range(50):
        boosts.refresh()
        assert boosts.rate(binding, "sales") == 0.1  # the cached state, not re-read
    assert reads.calls == 1
    now[0] += 3.0
    boosts.refresh()
    assert reads.calls == 2
    assert boosts.rate(binding, "sales") == 1.0 and boosts.rate(binding, "support") == 0.1
    reads.firing = {}
    now[0] += 3.0
    boosts.refresh()
    assert boosts.ceiling(binding) == 0.1  # resolved: back to the binding's rate


def test_without_a_boost_nothing_is_read() -> None:
    reads = Reads()
    boosts = Boosts([ScorerBinding(name="plain", scorer="completeness")], reads, 3.0)
    boosts.refresh()
    assert not boosts.active and reads.calls == 0


def _problem(sampling: str, rules: str = "") -> str:
    text = (
        "scorers:\n- name: judged\n  scorer: completeness\n  sampling:\n"
        f"{sampling}alerts:\n  rules:\n"
        "  - {name: low, type: threshold, binding: judged, below: 0.5}\n"
        f"{rules}"
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    return str(caught.value)


@pytest.mark.parametrize(
    ("sampling", "named", "says"),
    [
        (
            "    boost: {rate: 1.0, while: nope}\n",
            "scorers.0.sampling.boost.while",
            "no alert rule named 'nope'",
        ),
        ("    boost: {rate: 1.5, while: low}\n", "scorers.0.sampling.boost.rate", "less than"),
        ("    boost: {rate: 1.0, during: low}\n", "scorers.0.sampling.boost.during", "xtra"),
        ("    boost: {rate: 1.0}\n", "scorers.0.sampling.boost.while", "Field required"),
    ],
)
def test_a_bad_boost_fails_at_start_naming_its_key(sampling: str, named: str, says: str) -> None:
    problem = _problem(sampling)
    assert named in problem
    assert says in problem


def test_a_conversation_binding_takes_no_boost() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(
            "scorers:\n- name: judged\n  scorer: completeness\n  target: conversation\n"
            "  sampling: {boost: {while: low}}\n"
            "alerts:\n  rules:\n  - {name: low, type: threshold, binding: judged, below: 0.5}\n"
        )
    assert "scorers.0.sampling.boost" in str(caught.value)
    assert "no boost" in str(caught.value)


def test_a_good_boost_validates() -> None:
    config = parse_config(
        "scorers:\n- name: judged\n  scorer: completeness\n  sampling:\n"
        "    rate: 0.1\n    boost: {rate: 1.0, while: low}\n"
        "alerts:\n  rules:\n  - {name: low, type: threshold, binding: judged, below: 0.5}\n"
    )
    boost = config.scorers[0].sampling.boost
    assert boost is not None and boost.while_ == "low" and boost.rate == 1.0
