"""``scorers[].after``: a cascade, a binding that scores a run only when another binding's score
on the same run flagged it, plus an ``explore`` share of the others.

Its own module (not :mod:`tracescore.pipeline.config`) so that the checks across bindings (the
named binding exists, scores the same runs, and no cascade loops back on itself) live beside
the shape they check; the top-level configuration reports them with the bad key named
(:meth:`tracescore.config.Config.problems`), and the worker refuses the same mistakes when
bindings are built without a config file (:mod:`tracescore.pipeline.cascade`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import Field, model_validator

from tracescore.settings import Problem, Section


class CascadeConfig(Section):
    """Score a run only when the named binding's score on it is ``below`` or ``above`` a
    value, or errored (``errored: true``); any condition given that holds flags the run.
    ``explore`` judges that share of the other runs the named binding scored, chosen by a hash
    of the run (as sampling is), so the cascade's blind spot stays measured."""

    binding: str = Field(min_length=1, max_length=100)
    """The upstream binding: the cheap scorer (or cheap judge) that runs first."""
    below: float | None = None
    """Flag the run when the upstream score is below this."""
    above: float | None = None
    """Flag the run when the upstream score is above this (a toxicity-like score)."""
    errored: bool = False
    """Flag the run when the upstream scorer failed on it."""
    explore: float = Field(0.0, ge=0.0, le=1.0)
    """The share of the runs the upstream scored (or errored on) without flagging them that are
    scored anyway."""

    @model_validator(mode="after")
    def _some_trigger(self) -> CascadeConfig:
        if self.below is None and self.above is None and not self.errored:
            raise ValueError("give below, above or errored: true (what flags a run)")
        return self


class Cascaded(Protocol):
    """What the checks read of a binding (:class:`tracescore.pipeline.config.ScorerBinding`,
    which holds this section: named here by shape, not imported, so neither module imports
    the other)."""

    @property
    def name(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def after(self) -> CascadeConfig | None: ...


def cascade_problems(bindings: Sequence[Cascaded]) -> list[Problem]:
    """Every ``after`` that names no binding, names a binding scoring other runs (a different
    ``target``, or whole conversations), or closes a loop; each with the key to fix."""
    by_name = {binding.name: binding for binding in bindings}
    found: list[Problem] = []
    for index, binding in enumerate(bindings):
        after = binding.after
        if after is None:
            continue
        key = ("scorers", str(index), "after")
        upstream = by_name.get(after.binding)
        if upstream is None:
            found.append(((*key, "binding"), f"no binding named {after.binding!r} in scorers"))
        elif binding.target == "conversation" or upstream.target == "conversation":
            found.append(
                ((*key, "binding"), "a cascade scores runs: conversation bindings take no part")
            )
        elif upstream.target != binding.target:
            found.append(
                (
                    (*key, "binding"),
                    f"{after.binding!r} scores {upstream.target} runs and this binding "
                    f"{binding.target} runs: a cascade needs the same runs (same target)",
                )
            )
        elif (loop := _loop(binding.name, by_name)) is not None:
            found.append(((*key, "binding"), f"a cascade that loops: {' → '.join(loop)}"))
    return found


def _loop(start: str, by_name: dict[str, Cascaded]) -> list[str] | None:
    """The names from ``start`` following ``after`` back to ``start``, if they get there."""
    path = [start]
    current = by_name[start]
    while current.after is not None and (upstream := by_name.get(current.after.binding)):
        path.append(upstream.name)
        if upstream.name == start:
            return path
        if upstream.name in path[:-1]:
            return None  # a loop further up: reported on the bindings that make it
        current = upstream
    return None
