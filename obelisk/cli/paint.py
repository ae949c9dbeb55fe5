"""Colour for the commands that print lines of text (``validate``, ``dry-run``, ``run``'s
report, ``conformance``): on a terminal only, never when ``NO_COLOR`` is set.

A :data:`Paint` wraps text already made inert in a style's escape codes (rich's
``Style``, the standard 8 colours), or returns it as it is when colour is off: the plain
text is the same either way, and a command that prints to a pipe or a file never imports
rich (``validate`` stays light).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

#: ``paint(text, style)``: ``text`` in a rich style (``"bold red"``), or as it is.
Paint = Callable[[str, str], str]

#: The style of each severity and outcome word, shared by every command.
STYLES = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan",
          "executed": "green", "failed": "red", "skipped": "dim", "cancelled": "yellow",
          "invalid": "red", "PASS": "green", "FAIL": "bold red", "UNSUPPORTED": "yellow"}


def colour_wanted(stream: Any) -> bool:
    """Colour on ``stream``: it is a terminal and ``NO_COLOR`` is not set (non-empty)."""
    isatty = getattr(stream, "isatty", None)
    return not os.environ.get("NO_COLOR") and callable(isatty) and bool(isatty())


def plain(text: str, style: str) -> str:
    """The paint of a stream without colour: ``text`` as it is."""
    return text


def paint_for(stream: Any) -> Paint:
    """How to paint text printed to ``stream`` (:func:`plain` unless colour is wanted)."""
    if not colour_wanted(stream):
        return plain
    from rich.color import ColorSystem
    from rich.style import Style

    styles: dict[str, Style] = {}

    def paint(text: str, style: str) -> str:
        if not text or not style:
            return text
        if style not in styles:
            styles[style] = Style.parse(style)
        return styles[style].render(text, color_system=ColorSystem.STANDARD)

    return paint


def word(paint: Paint, text: str, key: str | None = None) -> str:
    """``text`` in the style :data:`STYLES` gives ``key`` (``text`` itself by default)."""
    return paint(text, STYLES.get(text if key is None else key, ""))


__all__ = ["STYLES", "Paint", "colour_wanted", "paint_for", "plain", "word"]
