"""Shared test settings.

Hypothesis runs derandomized under CI (``CI`` set), so a red run can be reproduced
exactly; locally it explores new examples every run. The fast loop, ``pytest -m "not
slow"``, gives each property that does not ask for its own number of examples ten of
them (the ``quick`` profile) instead of a hundred: it is the loop of someone changing
code; the whole suite, in CI, runs every property in full.

``OBELISK_PYRSISTENT=public`` runs the suite on pyrsistent's public API instead of the
kernel room's bucket reads (``obelisk.core.pmaps``): the general path, tested whole. The
switch is made here, before any test module imports obelisk.
"""

import os
import pathlib
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # the tests' helper modules

if os.environ.get("OBELISK_PYRSISTENT") == "public":
    from obelisk.core import pmaps

    pmaps.use_public_api()

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.register_profile("quick", deadline=None, max_examples=10)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_configure(config: pytest.Config) -> None:
    """The fast loop (``-m "not slow"``, outside CI, no profile asked for) is quick."""
    if (config.getoption("markexpr", "") == "not slow" and not os.environ.get("CI")
            and not config.getoption("hypothesis_profile", None)):
        settings.load_profile("quick")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A throw-away PostgreSQL cluster for the session (tests/pgcluster.py); skips where
    PostgreSQL is absent, unless OBELISK_REQUIRE_POSTGRES is set."""
    import pgcluster

    cluster = pgcluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: Any) -> str:
    """A URL of the test cluster whose search path is a schema of this test's own."""
    import psycopg

    schema = "t" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return str(pg_cluster.url(schema))


@pytest.fixture(params=["sqlite", "postgres"])
def journal_at(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Any:
    """``journal_at(name)``: where a test's journal called ``name`` is: an SQLite file of
    that name, or a PostgreSQL URL of a schema of its own (one parametrised suite runs
    against both backends)."""
    if request.param == "sqlite":
        return lambda name: str(tmp_path / name)
    import psycopg

    cluster = request.getfixturevalue("pg_cluster")
    made: dict[str, str] = {}

    def at(name: str) -> str:
        if name not in made:
            schema = "t" + uuid.uuid4().hex[:12]
            with psycopg.connect(cluster.url(), autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            made[name] = str(cluster.url(schema))
        return made[name]

    return at


@pytest.fixture
def journal_target(journal_at: Any) -> str:
    """Where a test's journal is, on each backend (see ``journal_at``)."""
    return str(journal_at("run.db"))
