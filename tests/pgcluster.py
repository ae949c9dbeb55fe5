"""A throw-away PostgreSQL cluster for the tests. Not a test module.

:func:`start` makes one with ``initdb`` in a temporary folder (as the ``postgres`` user when
the tests run as root: the server refuses root), starts it with ``pg_ctl`` on a free port
of 127.0.0.1 and returns a :class:`Cluster`; :meth:`Cluster.stop` removes it. Connections
from 127.0.0.1 need the superuser's password (scram-sha-256), so URLs carry one, as a
user's might. The tests' cluster runs with ``fsync=off``: commits mean what they always do to
other sessions, only a power loss of the test machine is not survived (the benchmarks
start theirs with ``fsync`` on).

Where the binaries are absent the tests that need the cluster skip, unless
``OBELISK_REQUIRE_POSTGRES`` is set (CI sets it): then they fail.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid

import pytest

USER = "obelisk"
PASSWORD = "pw-" + uuid.uuid4().hex[:12]


def binaries() -> str | None:
    """The folder holding initdb and pg_ctl, or None."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(os.path.realpath(found))
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(folder, "initdb")):
            return folder
    return None


def missing(reason: str) -> None:
    """Skip (or fail, under OBELISK_REQUIRE_POSTGRES) a test that needs the cluster."""
    if os.environ.get("OBELISK_REQUIRE_POSTGRES"):
        pytest.fail(f"PostgreSQL is required (OBELISK_REQUIRE_POSTGRES is set): {reason}")
    pytest.skip(f"PostgreSQL is not available ({reason}): install Debian's postgresql "
                "package to run these tests")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A running throw-away cluster: its folder, port and binaries."""

    def __init__(self, folder: str, port: int, bin_dir: str, as_user: list[str],
                 fsync: bool = False) -> None:
        self.folder = folder
        self.port = port
        self.bin_dir = bin_dir
        self.as_user = as_user
        self.fsync = fsync

    def url(self, schema: str | None = None, password: bool = True) -> str:
        """A URL of the cluster's ``postgres`` database (``schema``: its search path)."""
        auth = f"{USER}:{PASSWORD}" if password else USER
        url = f"postgresql://{auth}@127.0.0.1:{self.port}/postgres"
        return url + (f"?options=-csearch_path%3D{schema}" if schema else "")

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Run pg_ctl on the cluster."""
        return subprocess.run([*self.as_user, os.path.join(self.bin_dir, "pg_ctl"), "-D",
                               os.path.join(self.folder, "data"), "-w", "-t", "60", *args],
                              capture_output=True, check=check, timeout=120)

    def start(self) -> None:
        self.ctl("-l", os.path.join(self.folder, "log"), "-o",
                 f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
                 + ("" if self.fsync else "-c fsync=off -c full_page_writes=off ")
                 + "-c max_connections=100", "start")

    def restart(self) -> None:
        """Restart the server (fast shutdown: every connection is dropped)."""
        self.ctl("-m", "fast", "stop")
        self.start()

    def stop(self) -> None:
        self.ctl("-m", "immediate", "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def start(fsync: bool = False) -> Cluster:
    """A new cluster, started; skips (or fails) when PostgreSQL is absent. ``fsync``: a
    commit waits for the disk, as a production server's does (the benchmarks')."""
    bin_dir = binaries()
    if bin_dir is None:
        missing("initdb was not found on PATH or in /usr/lib/postgresql/*/bin")
        raise AssertionError("unreachable")
    folder = tempfile.mkdtemp(prefix="obelisk-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            missing("running as root, and there is no postgres user to run the server as")
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    pwfile = os.path.join(folder, "pw")
    with open(pwfile, "w", encoding="ascii") as handle:
        handle.write(PASSWORD + "\n")
    if as_user:
        shutil.chown(pwfile, "postgres")
    subprocess.run([*as_user, os.path.join(bin_dir, "initdb"), "-D",
                    os.path.join(folder, "data"), "-U", USER, "--pwfile", pwfile,
                    "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                    "--no-sync"], capture_output=True, check=True, timeout=120)
    cluster = Cluster(folder, _free_port(), bin_dir, as_user, fsync)
    cluster.start()
    return cluster
