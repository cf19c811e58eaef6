"""The installed package's version, read from its metadata so ``pyproject.toml`` is its only source.

A leaf module: the emitter stamps it on re-emitted telemetry without importing the package root,
which lazily pulls in the offline eval runner.
"""

from importlib.metadata import version

__version__ = version("tracescore")
