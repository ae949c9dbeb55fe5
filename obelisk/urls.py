"""Where a journal is: an SQLite file's path, or a PostgreSQL URL; and how a URL is shown
(never with its password), in messages and in the process title.

A leaf module of the shell (no obelisk import), so the command line can hide a password
from the process title before it loads anything else.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qs, unquote, urlsplit

#: The URL schemes libpq reads as a PostgreSQL connection.
SCHEMES = ("postgresql://", "postgres://")

# ``scheme://user:password@``: the password is what is hidden.
_PASSWORD = re.compile(r"^([a-z]+://[^:@/?#]*):[^@/?#]*@", re.IGNORECASE)
# ``password=...`` in the query string (libpq reads its options there too).
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def is_url(target: str | os.PathLike[str]) -> bool:
    """True when ``target`` is a PostgreSQL URL rather than a file's path."""
    return isinstance(target, str) and target.lower().startswith(SCHEMES)


def shown(target: str) -> str:
    """``target`` as errors and messages print it: a URL's password replaced by ``***``."""
    if not is_url(target):
        return target
    return _QUERY_PASSWORD.sub(r"\1***", _PASSWORD.sub(r"\1:***@", target))


def hide_in(text: str, target: str) -> str:
    """``text`` with the password of ``target`` (when it has one) made ``***``: an error
    from the driver may quote the URL."""
    if not is_url(target):
        return text
    for secret in _secrets(target):
        text = text.replace(secret, "***")
    return text.replace(target, shown(target))


def _secrets(target: str) -> list[str]:
    try:
        parts = urlsplit(target)
        found = [parts.password or ""]
        found += parse_qs(parts.query).get("password", [])
    except ValueError:
        return []
    return [s for secret in found if secret for s in {secret, unquote(secret)} if len(s) > 2]


def hide_from_title(words: list[str]) -> bool:
    """When a word of the command line is a URL with a password, show the command line
    without it in the process title (``ps``, ``/proc/PID/cmdline``), with setproctitle
    (the ``postgres`` extra); whether it did. For the command line's own process only: it
    changes the process."""
    # ``--journal=URL`` is one word: its value is the URL.
    words = [w.partition("=")[2] if w.startswith("--") and "=" in w else w for w in words]
    if not any(is_url(word) and shown(word) != word for word in words):
        return False
    try:
        from setproctitle import getproctitle, setproctitle
    except ImportError:
        return False
    title = getproctitle()
    for word in words:
        if is_url(word):
            title = title.replace(word, shown(word))
    setproctitle(title)
    return True
