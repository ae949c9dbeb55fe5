"""Did-you-mean for words: the closest of a few known names to a misspelt one.

Pure and small, so the compiler's messages and the shell's (plan-file fields, for
example) suggest names the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from obelisk.core.methods import Method

#: Words people write for an ``_outputMethod`` that obelisk spells otherwise.
METHOD_ALIASES: Mapping[str, str] = {
    "append": Method.PUSH.value, "add": Method.PUSH.value, "insert": Method.PUSH.value,
    "extend": Method.CONCAT.value, "appendall": Method.CONCAT.value,
    "update": Method.MERGE.value, "deepmerge": Method.MERGE.value,
    "replace": Method.SET.value, "overwrite": Method.SET.value, "put": Method.SET.value,
    "write": Method.SET.value, "shallowmerge": Method.ASSIGN.value,
}


def closest(word: str, choices: Iterable[str], *,
            aliases: Mapping[str, str] | None = None) -> str | None:
    """The choice ``word`` most likely means, or None when none is close.

    ``aliases`` maps other words for a choice (compared without case, ``_`` or ``-``) to
    it; otherwise the nearest spelling wins (``tool`` -> ``tools``).
    """
    options = sorted(set(choices))
    if word in options:
        return word
    if aliases:
        key = word.lower().replace("_", "").replace("-", "")
        alias = aliases.get(key)
        if alias is not None and alias in options:
            return alias
    lowered = {o.lower(): o for o in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    return close_match(word, options, 0.6)


def close_match(word: str, options: Sequence[str], cutoff: float) -> str | None:
    """The option most like ``word`` (difflib's ratio at least ``cutoff``), or None.

    difflib is imported here, on first use: a plan with nothing misspelt never needs it.
    """
    import difflib

    near = difflib.get_close_matches(word, options, n=1, cutoff=cutoff)
    return near[0] if near else None
