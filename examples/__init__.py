"""The examples that ship with obelisk: plan files, agent files and activities for them.

Installed, this folder is the package ``obelisk.examples``, so the examples can be tried
right after ``pip install obelisk``, with no checkout. ``python -m obelisk.examples DIR``
copies the plan and agent files into DIR; their tools' activities are

- ``obelisk.examples.shop:ACTIVITIES``: orders, payments, parcels and refunds
  (``payment.json``, ``order.json``, ``refund.json``, ``agent/refund.json``,
  ``agent/self-correct.json``, ``agent/lazy-approve.json``);
- ``obelisk.examples.assistant:ACTIVITIES``: the weather, comments, translation, pages
  and poems of the other examples.

They answer from small tables, without a network, the same way on every run.
"""

# Installed as obelisk.examples; imported by its own name (possible from the repository
# root) it would be a second copy of the package, beside the installed one.
if __name__ != "obelisk.examples":
    raise ImportError(f"import obelisk.examples, not {__name__}: the examples/ folder is "
                      "the package obelisk.examples")

from importlib import resources


def folder() -> str:
    """The folder of the example files (a real folder: the package is installed on disk)."""
    return str(resources.files("obelisk.examples"))
