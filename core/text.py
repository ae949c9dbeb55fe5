"""Small text helpers shared by every layer: the caret under a span, ``a``/``an``.

Each rule lives here once (errors, diagnostics and the CLI used to carry their own copies).
"""

from __future__ import annotations

from collections.abc import Callable

#: How many characters of a long line are shown around the caret.
EXCERPT_WIDTH = 100


def excerpt(text: str, offset: int, width: int = EXCERPT_WIDTH) -> tuple[str, int]:
    """A window of at most ``width`` characters of ``text`` around ``offset``.

    Newlines and tabs become spaces so the caret stays under the right character; a cut
    end is marked with ``…``. Returns the window and where ``offset`` falls inside it.
    """
    text = text.replace("\n", " ").replace("\t", " ")
    if len(text) <= width:
        return text, offset
    start = max(0, min(offset - width // 2, len(text) - width))
    shown = text[start:start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(text) else ""
    return prefix + shown + suffix, offset - start + len(prefix)


def _same(text: str) -> str:
    return text


def caret_line(
    text: str, start: int, end: int, *, indent: str = "", width: int = EXCERPT_WIDTH,
    show: Callable[[str], str] = _same,
) -> str:
    """Two lines: ``text`` (a window of it when long) and carets under ``text[start:end]``.

    ``start`` and ``end`` are 0-based character offsets, ``end`` exclusive; the caret is at
    least one character wide and never runs past the shown text. Each line starts with
    ``indent``. ``show`` rewrites the shown text (the CLI makes control characters visible
    with it); the caret is placed under the rewritten span, so it stays aligned.

        >>> print(caret_line("†state.recipt", 7, 13, indent="  "))
          †state.recipt
                 ^^^^^^
    """
    shown, offset = excerpt(text, start, width)
    stop = offset + max(1, min(end - start, len(shown) - offset))
    before, marked = show(shown[:offset]), show(shown[offset:stop])
    return (f"{indent}{before}{marked}{show(shown[stop:])}\n"
            f"{indent}{' ' * len(before)}{'^' * max(1, len(marked))}")


def article(word: str) -> str:
    """``word`` with its indefinite article: ``an object``, ``a string``.

    The rule is the simple one (a leading vowel letter takes ``an``), enough for the JSON
    type names and tool words obelisk writes.
    """
    return ("an " if word[:1].lower() in "aeiou" and word else "a ") + word


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` with ``noun`` agreeing: ``1 call``, ``2 calls``, ``0 errors``; ``many``
    for a plural that is not ``noun + "s"`` (``1 entry``, ``2 entries``)."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"
