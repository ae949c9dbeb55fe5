"""Running plans on a Dask cluster (the ``obelisk[dask]`` extra): see docs/distributed.md.

The state machine stays in the client; each call of a tool placed on the cluster is one
Dask future, run by a worker that imports the activity by its path. ``import obelisk``
never imports this package, and a worker imports only :mod:`obelisk.dask.worker`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from obelisk.core.lazy import LazyExports

if TYPE_CHECKING:
    from obelisk.dask.cluster import dask_client
    from obelisk.dask.paths import ActivityPath, NotImportable
    from obelisk.dask.placement import EXECUTOR, Placement
    from obelisk.dask.remote import DaskInterpreter, TraceContext
    from obelisk.dask.run import DaskActivities, resume_dask, run_dask
    from obelisk.dask.worker import trace_context

_EXPORTS = LazyExports(globals(), {
    "obelisk.dask.cluster": ("dask_client",),
    "obelisk.dask.paths": ("ActivityPath", "NotImportable"),
    "obelisk.dask.placement": ("EXECUTOR", "Placement"),
    "obelisk.dask.remote": ("DaskInterpreter", "TraceContext"),
    "obelisk.dask.run": ("DaskActivities", "resume_dask", "run_dask"),
    "obelisk.dask.worker": ("trace_context",),
})
__getattr__, __dir__ = _EXPORTS.getattr, _EXPORTS.dir

__all__ = [
    "EXECUTOR", "ActivityPath", "DaskActivities", "DaskInterpreter", "NotImportable",
    "Placement", "TraceContext", "dask_client", "resume_dask", "run_dask", "trace_context",
]
