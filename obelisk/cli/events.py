"""``--events FILE`` on ``run``, ``agent`` and ``resume``: the run's typed events as JSON
Lines, one event a line, written as they happen (docs/observability.md)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from obelisk.cli.safe import json_text
from obelisk.jsonio import InputError

__all__ = ["add_events_argument", "events_file"]


def add_events_argument(parser: argparse.ArgumentParser) -> None:
    """``--events FILE``."""
    parser.add_argument("--events", metavar="FILE.jsonl",
                        help="write the run's typed events here as JSON Lines (read by "
                             "obelisk report)")


@contextlib.contextmanager
def events_file(path: str | None) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """The ``on_event`` callback writing to ``path`` (None: no events), the file closed
    however the run ends. A file that cannot be written is bad input (exit 2)."""
    if not path:
        yield None
        return
    try:
        handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    with handle:
        def write(event: dict[str, Any]) -> None:
            handle.write(json_text(event, indent=None) + "\n")
            handle.flush()  # an interrupted run keeps every event told so far

        yield write
