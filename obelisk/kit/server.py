"""``obelisk adapter``: obelisk itself speaking the adapter protocol.

It reads one JSON request per line from standard input and writes one JSON answer per
line to standard output, flushing each, until its input ends. Each answer echoes its
request's ``id`` when it has one, so obelisk can tell it from a line that answers no
request. It is the model an implementer copies, and the first thing the tests drive. A
line that is not JSON, or a request of the wrong shape, gets ``{"failure": M}``; the loop
never stops on bad input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from obelisk.kit import local

#: What answers one request: a parsed JSON line in, the answer object out.
Answer = Callable[[Any], dict[str, Any]]


def serve(stdin: TextIO, stdout: TextIO, answer: Answer) -> int:
    """Answer every request line on ``stdin`` with ``answer``; returns 0 at end of input."""
    for line in stdin:
        if not line.strip():
            continue  # blank lines carry no request and get no answer
        try:
            request = json.loads(line)
        except ValueError as exc:
            response: dict[str, Any] = {"failure": f"the request is not JSON: {exc}"}
        else:
            try:
                response = answer(request)
            except Exception as exc:  # one bad request never ends the loop
                response = {"failure": f"internal error: {type(exc).__name__}: {exc}"}
            if isinstance(request, dict) and "id" in request:
                response = {**response, "id": request["id"]}
        stdout.write(json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n")
        stdout.flush()
    return 0


def local_answer(interpreter: str = "sync") -> Answer:
    """obelisk's own answers, with plan runs under ``interpreter``."""
    return lambda request: local.answer(request, interpreter)
