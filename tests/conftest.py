"""Shared test settings.

Hypothesis runs derandomized under CI (``CI`` set), so a red run can be reproduced
exactly; locally it explores new examples every run.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
