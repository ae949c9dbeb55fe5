"""``obelisk report``: one self-contained HTML page of a run (the plan as an SVG graph, a
Gantt timeline, each call's details, a summary), made from the run's typed events: an
``--events`` file, a journal, or a ``--json`` report (docs/observability.md)."""

from obelisk.runreport.load import is_journal, load_events
from obelisk.runreport.page import render_page

__all__ = ["is_journal", "load_events", "render_page"]
