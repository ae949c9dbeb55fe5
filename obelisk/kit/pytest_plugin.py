"""The kit's pytest plugin: ``pytest --obelisk-against 'COMMAND'`` runs the conformance
vectors as tests, so that another implementation's CI shows each vector as a test.

obelisk registers it with pytest (the ``pytest11`` entry point, named ``obelisk``;
``pytest -p no:obelisk`` turns it off); the ``testing`` extra brings pytest. Without
``--obelisk-against`` it does nothing. With it, pytest collects one item per vector, beside
the project's own tests: the pack bundled with obelisk, or the files and folders given
with ``--obelisk-vectors``. An item is named by the vector's id (``pytest -k`` selects
vectors by id); it passes when the vector holds on the adapter's answers, fails with the
difference as its message when it does not, and is skipped when it needs an op the
adapter does not list in ``hello`` (failed with ``--obelisk-strict``). The adapter is
started once, at the first vector, and judged as ``obelisk conformance --against`` judges
it: a crash or a hang fails the vector in flight and the adapter is started again.

Importing this module imports pytest only; the kit is imported when vectors are collected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from obelisk.kit.client import AdapterClient
    from obelisk.kit.conformance import Entry


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--obelisk-against``, ``--obelisk-vectors``, ``--obelisk-timeout``,
    ``--obelisk-strict``."""
    group = parser.getgroup("obelisk", "conformance vectors of the Call/Plan protocol (obelisk)")
    group.addoption("--obelisk-against", metavar="COMMAND", default=None,
                    help="run the conformance vectors as tests against the adapter this "
                         "command starts (split like a shell line; no shell runs it)")
    group.addoption("--obelisk-vectors", metavar="PATH", action="append", default=[],
                    help="a vector file or a folder of *.json; may be repeated (default: "
                         "the pack bundled with obelisk)")
    group.addoption("--obelisk-timeout", metavar="SECONDS", type=float, default=10.0,
                    help="the deadline of each request to the adapter (default 10)")
    group.addoption("--obelisk-strict", action="store_true",
                    help="fail, not skip, the vectors that need an op the adapter does not "
                         "list in hello")


def pytest_configure(config: pytest.Config) -> None:
    """Refuse an empty adapter command or a deadline that is not a positive number."""
    command = config.getoption("obelisk_against")
    if command is None:
        return
    if not command.strip():
        raise pytest.UsageError("--obelisk-against needs the command that starts the adapter, "
                                "got an empty one")
    if not config.getoption("obelisk_timeout") > 0:
        raise pytest.UsageError("--obelisk-timeout must be a positive number of seconds")


@pytest.hookimpl(tryfirst=True)  # before -k and -m select among the items
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Put one item per vector before the project's own tests."""
    if config.getoption("obelisk_against") is None:
        return
    from obelisk.kit.conformance import entries
    from obelisk.kit.pack import pack_dir

    given = config.getoption("obelisk_vectors")
    collected: list[pytest.Item] = []
    files: dict[str, VectorFile] = {}
    for entry in entries(given or [pack_dir()]):
        path = entry.source.rsplit("[", 1)[0] if entry.source.endswith("]") else entry.source
        if path not in files:
            # The pack's files by name; given ones as given (relative, as typed).
            shown = path if given else "pack/" + os.path.basename(path)
            files[path] = VectorFile.from_parent(session, name=shown, nodeid=f"obelisk::{shown}")
        collected.append(Vector.from_parent(files[path], name=entry.name, entry=entry))
    # Reported as collected, so that "collected N items" counts the vectors too.
    session.ihook.pytest_collectreport(report=pytest.CollectReport(
        "obelisk", "passed", None, list[pytest.Item | pytest.Collector](collected)))
    items[:0] = collected


class VectorFile(pytest.Collector):
    """A vector file: the parent of its vectors' items (which the plugin makes itself)."""

    def collect(self) -> Iterator[pytest.Item]:
        """Nothing: the items are made in ``pytest_collection_modifyitems``."""
        return iter(())


class VectorFailed(Exception):
    """A vector that does not hold; its problems are the test's failure message."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class Vector(pytest.Item):
    """One conformance vector, judged on the adapter's answers."""

    def __init__(self, *, entry: Entry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry

    def runtest(self) -> None:
        """Judge the vector: pass, fail with its problems, or skip it as unsupported."""
        from obelisk.kit.conformance import check_entry

        client, failure = _adapter(self.config)
        if client is None:
            raise VectorFailed((failure,))
        verdict = check_entry(self.entry, client)
        if verdict.problems:
            raise VectorFailed(verdict.problems)
        if verdict.unsupported:
            why = (f"needs the {', '.join(verdict.unsupported)} op, which "
                   f"{client.name or 'the adapter'} does not list in hello")
            if self.config.getoption("obelisk_strict"):
                raise VectorFailed((why,))
            pytest.skip(why)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        """The difference itself, without a traceback of the plugin."""
        if isinstance(excinfo.value, VectorFailed):
            return "\n".join(excinfo.value.problems)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[str, int | None, str]:
        """Where the vector is, for pytest's reports."""
        return self.entry.source, None, f"vector {self.name}"


_ADAPTER = pytest.StashKey["tuple[AdapterClient | None, str]"]()


def _adapter(config: pytest.Config) -> tuple[AdapterClient | None, str]:
    """The session's adapter, started at the first vector; or None and why it did not
    start (then every vector fails with that)."""
    if _ADAPTER not in config.stash:
        from obelisk.kit.client import AdapterClient, AdapterError

        command = config.getoption("obelisk_against")
        try:
            client = AdapterClient(command, timeout=config.getoption("obelisk_timeout"))
            client.start()
        except AdapterError as exc:
            config.stash[_ADAPTER] = (None, f"the adapter ({command}) did not start: {exc}")
        else:
            config.stash[_ADAPTER] = (client, "")
    return config.stash[_ADAPTER]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the adapter."""
    client, _ = config.stash.get(_ADAPTER, (None, ""))
    if client is not None:
        client.close()
