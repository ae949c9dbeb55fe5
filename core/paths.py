"""Paths into JSON values: reading and overlap (their text: :mod:`obelisk.core.pathtext`).

A path is a tuple of segments. A string segment is an object key; an integer segment is an
array index (negative counts from the end, -1 is the last element) or, on an object, the
key spelled as its decimal text (so a message's nested ``data`` can hold index paths).
"""

from __future__ import annotations

from typing import TypeAlias

from pyrsistent import PMap, PVector

from obelisk.core.pmaps import get
from obelisk.core.values import MISSING, Frozen, Missing

Segment: TypeAlias = "str | int"
Path: TypeAlias = "tuple[str | int, ...]"



def get_in(value: Frozen | Missing, path: Path) -> Frozen | Missing:
    """The value at ``path`` inside ``value``, or MISSING.

    A path is MISSING when a key is absent, an index is out of range, or the path goes
    through a scalar (or through MISSING).
    """
    for segment in path:
        if type(value) is PMap and type(segment) is str:  # the common step
            value = get(value, segment, MISSING)
        elif value is MISSING:  # nothing written there (a plan compiled without context)
            return MISSING
        else:
            value = step(value, segment)
        if value is MISSING:
            return MISSING
    return value


def step(value: Frozen | Missing, segment: Segment) -> Frozen | Missing:
    """One segment of :func:`get_in`."""
    if isinstance(value, PMap):
        key = segment if isinstance(segment, str) else _index_key(segment)
        if key is None:
            return MISSING
        return value.get(key, MISSING)
    if isinstance(value, PVector) and isinstance(segment, int) and not isinstance(segment, bool):
        n = len(value)
        index = segment + n if segment < 0 else segment
        return value[index] if 0 <= index < n else MISSING
    return MISSING


def _index_key(segment: int) -> str | None:
    # An index on an object reads the key spelled as its decimal text (never negative:
    # "-1" on an object is the key "-1", reached with a quoted segment).
    return str(segment) if segment >= 0 else None


def overlaps(a: Path, b: Path) -> bool:
    """True when one path is a prefix of the other (so a write at one affects the other).

    Negative indexes alias non-negative ones, so an integer against an integer overlaps
    unless both have the same sign and differ; an index n >= 0 overlaps the key ``str(n)``
    (on an object, that index is that key).
    """
    for x, y in zip(a, b, strict=False):  # a prefix of the longer one
        if x == y or _same_key(x, y) or _same_key(y, x):
            continue
        if isinstance(x, int) and isinstance(y, int) and (x < 0) != (y < 0):
            continue  # -1 may be the same element as 3
        return False
    return True


def _same_key(x: Segment, y: Segment) -> bool:
    # On an object an index n >= 0 reads and writes the key spelled str(n), so the
    # segments 0 and "0" can name the same value.
    return isinstance(x, int) and isinstance(y, str) and x >= 0 and str(x) == y


def is_prefix(prefix: Path, path: Path) -> bool:
    """True when ``prefix`` is at or above ``path`` (segment by segment equal)."""
    return len(prefix) <= len(path) and path[: len(prefix)] == prefix
