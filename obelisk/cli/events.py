"""``--events FILE`` on ``run``, ``agent`` and ``resume``: the run's typed events as JSON
Lines, one event a line, written as they happen (docs/observability.md)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from obelisk.cli.safe import inert, json_text
from obelisk.jsonio import InputError

__all__ = ["EventsWriter", "add_events_argument", "events_file"]


def add_events_argument(parser: argparse.ArgumentParser) -> None:
    """``--events FILE``."""
    parser.add_argument("--events", metavar="FILE.jsonl",
                        help="write the run's typed events here as JSON Lines (read by "
                             "obelisk report)")


class EventsWriter:
    """The ``on_event`` callback writing each event as a line of ``handle``. A write that
    fails (a full disk, a reader that went away) is said once on ``err``, naming the file
    and the last event written; the later events are dropped and the run goes on."""

    def __init__(self, path: str, handle: TextIO, err: TextIO) -> None:
        self.path, self.handle, self.err = path, handle, err
        self.written = 0  # the seq of the last event written
        self.failed = False

    def __repr__(self) -> str:
        return f"--events {self.path}"

    def __call__(self, event: dict[str, Any]) -> None:
        if self.failed:
            return
        try:
            self.handle.write(json_text(event, indent=None) + "\n")
            self.handle.flush()  # an interrupted run keeps every event told so far
        except OSError as exc:
            self.failed = True
            kept = (f"events after seq {self.written} were not written" if self.written
                    else "no event was written")
            print(inert(f"obelisk: {self!r}: {exc}; {kept}"), file=self.err)
            return
        self.written = event["seq"]

    def close(self) -> None:
        """Close the file (what a failed write left buffered is dropped)."""
        with contextlib.suppress(OSError):
            self.handle.close()


@contextlib.contextmanager
def events_file(path: str | None, err: TextIO = sys.stderr
                ) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """The ``on_event`` callback writing to ``path`` (None: no events), the file closed
    however the run ends. A file that cannot be opened is bad input (exit 2); one that
    cannot be written later is said on ``err`` and the run goes on (:class:`EventsWriter`)."""
    if not path:
        yield None
        return
    try:
        handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    writer = EventsWriter(path, handle, err)
    try:
        yield writer
    finally:
        writer.close()
