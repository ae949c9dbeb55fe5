"""Shared test settings.

Hypothesis runs derandomized under CI (``CI`` set), so a red run can be reproduced
exactly; locally it explores new examples every run.

``OBELISK_PYRSISTENT=public`` runs the suite on pyrsistent's public API instead of the
kernel room's bucket reads (``obelisk.core.pmaps``): the general path, tested whole. The
switch is made here, before any test module imports obelisk.
"""

import os

from hypothesis import HealthCheck, settings

if os.environ.get("OBELISK_PYRSISTENT") == "public":
    from obelisk.core import pmaps

    pmaps.use_public_api()

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
