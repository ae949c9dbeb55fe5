"""The differential property of tests/test_run_properties.py, extended to the Dask
interpreter: on generated race-free plans (chains, fan-outs, branches, all five methods,
instances, approvals, activity delays, a concurrency limit), a run on a real cluster of
two worker processes gives run_sync's report, whatever order the workers finish in.

The workers run one activity, ``dask_activities.mocked``, which does what the scenario's
mock for the call's tool says; each example installs its mocks in every worker first.
"""

from __future__ import annotations

from typing import Any

import dask_activities as acts
import pytest
from daskcluster import local_cluster, on_cluster
from equivalents import activity_of
from hypothesis import HealthCheck, given, settings
from test_run_properties import approval, assert_race_free, scenarios, without_delays

from obelisk import ActivityPath, run_sync
from obelisk.interpreters.dryrun import DRY_RUN_DATE
from obelisk.interpreters.reporting import report

#: Bounded: each example is a run on the cluster (tens of milliseconds).
DASK_RUNS = settings(deadline=None, max_examples=40,
                     suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def cluster() -> Any:
    yield from local_cluster()


@pytest.mark.slow
@DASK_RUNS
@given(scenario=scenarios())
def test_a_dask_run_reports_what_run_sync_reports(cluster: Any,
                                                  scenario: dict[str, Any]) -> None:
    from obelisk import run_dask

    assert_race_free(scenario)
    plan, context, mocks = scenario["plan"], scenario["context"], scenario["mocks"]
    common: dict[str, Any] = dict(instances=scenario["instances"], approve=approval(scenario),
                                  clock=lambda: DRY_RUN_DATE)
    expected = run_sync(plan, context, **common, activities={
        tool: activity_of(without_delays(mock), "plain") for tool, mock in mocks.items()})

    async def on_dask(client: Any) -> Any:
        await client.run(acts.install, mocks)
        return await run_dask(plan, context, client=client, **common,
                              max_concurrency=scenario["max_concurrency"],
                              activities={tool: ActivityPath("dask_activities", "mocked")
                                          for tool in mocks})

    assert report(on_cluster(cluster, on_dask)) == report(expected)
