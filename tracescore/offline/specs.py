"""Scorer bindings from the command line: ``--scorer NAME[:key=value,…]`` and ``--judge MODEL``.

The offline commands build the same :class:`ScorerBinding` objects a config file holds, so a
scorer given on the command line is validated, built and routed exactly like a configured one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import yaml

from tracescore.judge.config import JudgeConfig
from tracescore.pipeline.config import ScorerBinding
from tracescore.scorers import registry

# A comma starts a new option only when a ``key=`` follows, so list values keep their commas.
_OPTION_SPLIT = re.compile(r",(?=\s*[A-Za-z_][\w-]*\s*=)")


class SpecError(ValueError):
    """A ``--scorer`` / ``--judge`` / ``--fail-under`` value that cannot be used."""


def parse_options(text: str) -> dict[str, Any]:
    """``key=value,key2=[a, b]``: each value read as a YAML scalar or flow list."""
    options: dict[str, Any] = {}
    for item in _OPTION_SPLIT.split(text):
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"option {item!r} is not key=value")
        try:
            options[key.strip().replace("-", "_")] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise SpecError(f"option {key.strip()}: cannot read {raw!r}: {exc}") from None
    return options


def parse_scorer_spec(spec: str) -> tuple[str, str, dict[str, Any]]:
    """``(binding name, scorer reference, options)`` of one ``--scorer`` value.

    ``NAME[:options]`` for a prebuilt scorer; ``module:attr[:options]`` for a custom one (its
    binding is named after ``attr``).
    """
    head, _, rest = spec.partition(":")
    if head in registry.names():
        return head, head, parse_options(rest) if rest else {}
    attribute, _, options = rest.partition(":")
    if not attribute:
        raise SpecError(
            f"unknown scorer {head!r}; known: {', '.join(registry.names())}, "
            "or module:attr for a custom scorer"
        )
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", attribute.rsplit(".", 1)[-1]).lstrip("-_.") or "custom"
    return name, f"{head}:{attribute}", parse_options(options) if options else {}


def bindings_from_specs(specs: Sequence[str]) -> list[ScorerBinding]:
    """One binding per ``--scorer``; a scorer given twice gets ``-2``, ``-3``… binding names."""
    bindings: list[ScorerBinding] = []
    seen: dict[str, int] = {}
    for spec in specs:
        name, reference, options = parse_scorer_spec(spec)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}-{seen[name]}"
        # A conversation scorer judges conversations: the target a config file must name for it.
        conversation = reference in registry.names() and registry.get(reference).conversation
        bindings.append(
            ScorerBinding(
                name=name,
                scorer=reference,
                options=options,
                target="conversation" if conversation else "agent",
            )
        )
    return bindings


def judge_from_flags(model: str | None, api_base: str | None) -> dict[str, JudgeConfig]:
    """``judges`` with the ``default`` judge of ``--judge`` / ``--api-base`` (empty without)."""
    if model is None:
        if api_base is not None:
            raise SpecError("--api-base needs --judge MODEL")
        return {}
    return {"default": JudgeConfig(model=model, api_base=api_base)}


def parse_thresholds(values: Sequence[str], flag: str = "--fail-under") -> dict[str, float]:
    """``binding=number`` pairs of ``--fail-under`` / ``--fail-over``."""
    thresholds: dict[str, float] = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            thresholds[name.strip()] = float(number)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise SpecError(f"{flag} {value!r}: expected BINDING=NUMBER, e.g. faithfulness=0.7")
    return thresholds


def resolve_bindings(
    configured: Sequence[ScorerBinding],
    judges: dict[str, Any],
    specs: Sequence[str],
    judge_model: str | None,
    api_base: str | None,
) -> tuple[list[ScorerBinding], dict[str, Any]]:
    """The bindings and judges an offline command uses: ``--scorer`` values replace the config's
    bindings, ``--judge`` becomes (or replaces) the ``default`` judge, which custom scorers given
    with ``--scorer`` then receive too (prebuilt LLM scorers take ``default`` anyway)."""
    flagged = judge_from_flags(judge_model, api_base)
    judges = {**judges, **flagged}
    if not specs:
        return list(configured), judges
    bindings = bindings_from_specs(specs)
    if flagged:
        bindings = [
            b.model_copy(update={"judge": "default"}) if ":" in b.scorer else b for b in bindings
        ]
    return bindings, judges
