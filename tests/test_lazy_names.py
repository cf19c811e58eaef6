"""The packages' lazily loaded public names: none is imported with its package, each loads on
first use, and an unknown name is an ``AttributeError`` naming the package."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import pytest

from tracescore.lazy_names import lazy_names


def test_a_name_loads_on_first_use_and_stays() -> None:
    package = types.ModuleType("example")
    package.__getattr__ = lazy_names(vars(package), {"dedent": "textwrap"})  # type: ignore[method-assign]

    assert "dedent" not in vars(package)
    assert package.dedent is textwrap.dedent
    assert vars(package)["dedent"] is textwrap.dedent  # later lookups skip __getattr__


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    package = types.ModuleType("example")
    package.__getattr__ = lazy_names(vars(package), {})  # type: ignore[method-assign]

    with pytest.raises(AttributeError, match="module 'example' has no attribute 'missing'"):
        _ = package.missing


def test_importing_the_packages_loads_none_of_their_names() -> None:
    """In a fresh interpreter, as the CLI and every helper process start: the eval runner,
    litellm's client and the prebuilt scorers stay unloaded until a name is used."""
    probe = textwrap.dedent(
        """
        import sys
        import tracescore, tracescore.judge, tracescore.scorers
        heavy = ("tracescore.offline.runner", "tracescore.judge.client",
                 "tracescore.scorers.code.tone", "tracescore.scorers.llm", "litellm", "numpy")
        print(sorted(name for name in heavy if name in sys.modules))
        tracescore.scorers.create_tone_scorer
        print("tracescore.scorers.code.tone" in sys.modules)
        """
    )
    lines = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()

    assert lines == ["[]", "True"]
