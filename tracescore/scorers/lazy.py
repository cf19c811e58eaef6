"""``lazy``: ``functools.cached_property`` without its lock.

On Python 3.11 every first read of a ``cached_property`` takes an ``RLock`` (about 1 µs, one
lock for the whole class); the consistency checks read a dozen such values per scored run,
each once, so the lock cost more than several of the values themselves. The values computed
this way are pure functions of their instance: two threads computing one at once store the
same value, so the lock guards nothing. Same semantics otherwise: the value is computed on
first read and stored in the instance's ``__dict__``, which later reads find before the
descriptor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar, overload

T = TypeVar("T")


class lazy(Generic[T]):
    """A value computed on first read and kept in the instance's ``__dict__``."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | Self:
        if instance is None:
            return self
        value = self.compute(instance)
        instance.__dict__[self.name] = value
        return value
