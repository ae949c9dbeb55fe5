"""``obelisk report SOURCE -o RUN.html``: one self-contained HTML page of a run, from its
events (``--events``), its journal, or its ``--json`` report (docs/observability.md)."""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from obelisk.cli.common import EXIT_OK, Command
from obelisk.jsonio import InputError
from obelisk.runreport import is_journal, load_events, render_page


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """SOURCE, ``-o``, ``--run``, ``--title``."""
    parser.add_argument("source", metavar="SOURCE",
                        help="an events file (--events), a journal (a file or a "
                             "postgresql:// URL) or a --json report")
    parser.add_argument("-o", "--out", metavar="RUN.html", required=True,
                        help="write the page here")
    parser.add_argument("--run", dest="run_id", metavar="ID",
                        help="the journal's run (default: the newest)")
    parser.add_argument("--title", help="the page's title (default: the source's name)")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write the page; exit 2 when the source holds no run or the page cannot be written."""
    events = load_events(args.source, args.run_id)
    if args.run_id is None and is_journal(args.source) and events[0].get("run"):
        print(f"report: run {events[0]['run']}, the newest in the journal (--run ID picks "
              "another)", file=err)
    page = render_page(events, args.title or os.path.basename(args.source) or "obelisk run")
    try:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"report: {args.out} ({len(page.encode('utf-8')) // 1024} KiB)", file=err)
    return EXIT_OK


REPORT = Command("report", "write a run's report as one HTML page", add_arguments, run)
