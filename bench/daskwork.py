"""The functions bench/dask_interpreter.py runs on the workers, imported there by path
(the workers have this folder on their path): the same work as an obelisk activity and as
a raw Dask function."""

from __future__ import annotations

import time
from typing import Any


def work(call: dict[str, Any], tool: Any, context: Any) -> Any:
    """The activity: ``ms`` milliseconds of sleep, then ``n`` + 1."""
    return raw(call.get("n", 0), call.get("ms", 0))


def raw(n: int, ms: float) -> dict[str, int]:
    """The same work as a plain function, for ``client.submit``."""
    if ms:
        time.sleep(ms / 1000)
    return {"n": n + 1}


ACTIVITIES = {"work": work}
