"""Where a journal is: an SQLite file's path, or a PostgreSQL URL; and how a URL is shown
(never with its password)."""

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
