"""Activities by import path: what a Dask worker imports to run a call.

A worker never receives a function's code: it receives an :class:`ActivityPath` (a
module, an attribute in it, and for an activity held in a mapping, its key) and imports
the activity itself, as ``obelisk run --activities package.module:NAME`` does in the
client. So the workers must be able to import the user's module (installed there, or its
folder on their ``PYTHONPATH``), and what they run is what that module holds.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from obelisk.core.errors import ObeliskError

__all__ = ["ActivityPath", "NotImportable", "load_activity", "path_of"]


class NotImportable(ObeliskError, ValueError):
    """An activity that a Dask worker could not import by its path (a lambda, a function
    defined inside another, one from ``__main__``): ``name`` is the activity, ``reason``
    says why and how to fix it."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"activity {name!r}: {reason}")


@frozen
class ActivityPath:
    """Where a worker finds an activity: ``module``, the dotted ``attribute`` path in it,
    and ``key`` when that attribute is a mapping of activities (``--activities
    package.module:NAME`` names one)."""

    module: str
    attribute: str
    key: str | None = None

    def __str__(self) -> str:
        text = f"{self.module}:{self.attribute}"
        return text if self.key is None else f"{text}[{self.key!r}]"

    @classmethod
    def parse(cls, text: str) -> ActivityPath:
        """``package.module:attribute`` as a path; raises ``ValueError`` for other text."""
        module, _, attribute = text.partition(":")
        if not module or not attribute or not all(
                part.isidentifier() for part in (*module.split("."), *attribute.split("."))):
            raise ValueError(f"an activity's import path is package.module:name, got {text!r}")
        return cls(module, attribute)


def path_of(name: str, fn: Callable[..., Any]) -> ActivityPath:
    """The import path of activity ``name``'s function ``fn``: its module and qualified
    name, checked by importing them here. Raises :class:`NotImportable` when they do not
    lead back to ``fn``."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise NotImportable(name, f"{fn!r} has no module and name to import it by: give "
                            "its import path instead ('package.module:function')")
    if "<" in qualname or module == "__main__":
        where = "in __main__" if module == "__main__" else \
            "inside a function (or is a lambda)"
        raise NotImportable(name, f"{module}:{qualname} is defined {where}, where a Dask "
                            "worker cannot import it: define it at the top level of an "
                            "importable module, or give its tool \"x-obelisk-executor\": "
                            "\"local\"")
    path = ActivityPath(module, qualname)
    found: Any
    try:
        found = load_activity(path)
    except Exception as exc:  # noqa: BLE001 - whatever importing it raised, said below
        found = exc
    if found is not fn:
        raise NotImportable(name, f"importing {path} does not give this function back "
                            f"({found!r}): give its import path instead "
                            "('package.module:function')")
    return path


def load_activity(path: ActivityPath) -> Callable[..., Any]:
    """The activity at ``path``, imported (once per process, then remembered). Raises the
    ``ImportError``, ``AttributeError`` or ``KeyError`` of a path that leads nowhere, and
    ``TypeError`` when it leads to something that cannot be called."""
    return _load(path.module, path.attribute, path.key)


@functools.lru_cache(maxsize=1024)
def _load(module: str, attribute: str, key: str | None) -> Callable[..., Any]:
    found: Any = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    if key is not None:
        if not isinstance(found, Mapping):
            raise TypeError(f"{module}:{attribute} is not a mapping of activities")
        found = found[key]
    if not callable(found):
        raise TypeError(f"{module}:{attribute} is {type(found).__name__}, not a function")
    return found  # type: ignore[no-any-return]
