"""Shared test settings.

Hypothesis runs derandomized under CI (``CI`` set), so a red run can be reproduced
exactly; locally it explores new examples every run.
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

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


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
