"""Paths as text: a segment, a dotted path, and the reference that reads one
(``†kind.user."my key"``), as references write them.

Below every other module of core that names a path in a message (errors, values), so
that each can render one without importing how paths are read.
"""

from __future__ import annotations

import re

#: A path as :mod:`obelisk.core.paths` defines it (spelled out here: this module sits
#: below it).
_Path = tuple["str | int", ...]

#: A name segment that needs no quotes: word characters, `$`, and `-` after the first.
_NAME = re.compile(r"[\w$][\w$-]*\Z")
_INTEGER = re.compile(r"-?[0-9]+\Z")


def render_segment(segment: str | int) -> str:
    """A segment as written in a reference: a bare name or integer, or a quoted key."""
    if isinstance(segment, int):
        return str(segment)
    text = _RENDERED.get(segment)
    if text is None:
        if len(_RENDERED) >= _RENDERED_MAX:  # a memo, not a store: bounded
            _RENDERED.clear()
        text = _RENDERED[segment] = _render_key(segment)
    return text


def _render_key(segment: str) -> str:
    if _NAME.match(segment) and not _INTEGER.match(segment) and segment not in _KEYWORDS:
        return segment
    escaped = segment.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


#: Keys as references write them, by key: the engine renders a target's text for every
#: message it writes, and keys repeat across a plan's paths. Emptied when full.
_RENDERED: dict[str, str] = {}
_RENDERED_MAX = 16_384


_KEYWORDS = frozenset({"true", "false", "null"})


def render_path(path: _Path) -> str:
    """A path as dotted text, for messages (``user.items.-1``)."""
    return ".".join(render_segment(s) for s in path)


def render_reference(kind: str, path: _Path) -> str:
    """A kind and path as the reference that reads them: ``†state.user."my key"``."""
    parts = ["†" + kind]
    for segment in path:
        parts.append(render_segment(segment))
    return ".".join(parts)
