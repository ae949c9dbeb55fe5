"""Durable runs: what journaling costs, how fast a resume replays, how the journal grows.

    python bench/durable.py

Prints, in one run:
- a 1,000-call plan whose activities take 5 ms: unjournaled vs journaled at ``sync``
  (target: at most 1.5 times);
- the same plan with no-op activities: unjournaled vs ``batch``, medians of 5 (target: at
  most 2 times), and ``sync`` for information;
- a 10,000-call run stopped at its midpoint: the journal's rows replayed per second by what
  a resume does before it runs anything (read the rows, decode them, ``replay_open`` under
  the collector settings ``obelisk resume`` uses; the median of 5; target: at least 20,000), how that
  time splits, and the time from ``resume`` to the first activity with the plan's compile;
- the journal's size for 1,000 and 10,000 calls (target: ratio at most 10);
- the same on a PostgreSQL journal (a throw-away server on 127.0.0.1 with ``fsync`` on,
  started by this script when PostgreSQL is installed): ``sync`` for 1,000 calls of 5 ms
  (target: at most 1.5 times), the replay rate (target: at least 20,000 events/s);
- take-over after an owner's death, on both backends: an ``obelisk run`` process with a
  1 s lease is killed (SIGKILL) mid-run; the seconds until a worker (polling every 0.5 s)
  starts the run's next activity (target: within the lease + 1 s; SQLite's owner is
  known dead at once, so its worker need not wait for the lease).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the throw-away PostgreSQL cluster

import obelisk  # noqa: E402
from obelisk import Journal  # noqa: E402


def plan(n: int) -> obelisk.CompiledPlan:
    """``n`` calls in chains of 10: each step reads the previous step's result."""
    calls: list[dict[str, Any]] = []
    for i in range(n):
        call: dict[str, Any] = {"_tool": "step", "i": i, "_outputPath": f"†s.r{i}"}
        if i % 10:
            call["prev"] = f"†s.r{i - 1}"
        calls.append(call)
    return obelisk.compile_plan(calls)


def sleeper(seconds: float) -> Any:
    def step(call: dict[str, Any], tool: Any, context: Any) -> Any:
        if seconds:
            time.sleep(seconds)
        return {"n": call["i"]}
    return step


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def journaled(compiled: obelisk.CompiledPlan, activities: Any, level: str, folder: str,
              name: str) -> tuple[float, int]:
    """Seconds of a run journaled at ``level`` in ``folder`` (a directory, or a function
    naming a fresh journal), and the journal file's size (0 for a database)."""
    path = target(folder, name)
    with Journal.open(path, level) as journal:
        seconds = timed(lambda: obelisk.run_durable(compiled, journal=journal, run_id="R",
                                                    activities=activities))
    size = sum(os.path.getsize(path + suffix) for suffix in ("", "-wal")
               if os.path.exists(path + suffix))
    return seconds, size


Folder = Any  # a directory's path, or a function giving a fresh journal's target


def target(folder: Folder, name: str) -> str:
    """The journal called ``name``: a file in the directory, or a fresh database schema."""
    return folder(name) if callable(folder) else os.path.join(folder, name)


class Stop(BaseException):
    """Stops the run in the middle, as a crash would."""


def stopped_run(folder: str, n: int = 10_000) -> str:
    """The journal of an ``n``-call run stopped at its midpoint, as a crash would leave it."""
    compiled = plan(n)
    path = target(folder, "half.db")
    count = 0

    def stop_halfway(call: dict[str, Any], tool: Any, context: Any) -> Any:
        nonlocal count
        count += 1
        if count > n // 2:
            raise Stop()
        return {"n": call["i"]}

    with Journal.open(path, "batch") as journal, contextlib.suppress(Stop):
        obelisk.run_durable(compiled, journal=journal, run_id="R",
                            activities={"step": stop_halfway})
    return path


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def replay_rate(path: str, repeats: int = 5) -> tuple[int, float, float, float]:
    """Rows of the stopped run, and the median seconds, over ``repeats`` replays, that a
    resume spends reading them, decoding them into run events, and replaying those through
    the machine (``replay_open`` under the collector settings ``obelisk resume`` uses: the
    library leaves the collector alone, the command line tunes it)."""
    from obelisk import gc_tuned
    from obelisk.interpreters.replaying import replay_open
    from obelisk.journal.codec import decode

    reading: list[float] = []
    decoding: list[float] = []
    replaying: list[float] = []
    rows = 0
    with Journal.open(path) as journal:
        for _ in range(repeats):
            # Compiled afresh each time: the plan memoises its calls' templates, and a
            # resume starts with none of them.
            run = obelisk.recorded(journal, "R")
            with gc_tuned(freeze=True):  # as `obelisk resume` does
                start = time.perf_counter()
                records = list(journal.records("R"))
                read = time.perf_counter()
                events = decode(records, journal.name)
                decoded = time.perf_counter()
                replay_open(run.plan, run.context, events)
                replaying.append(time.perf_counter() - decoded)
            decoding.append(decoded - read)
            reading.append(read - start)
            rows = len(records)
    return rows, median(reading), median(decoding), median(replaying)


def first_activity(path: str) -> float:
    """Seconds from ``resume`` to the first activity run again, compiling the recorded
    plan included (once: a resume appends to the journal, so this runs on a copy)."""
    first: list[float] = []

    def mark(call: dict[str, Any], tool: Any, context: Any) -> Any:
        if not first:
            first.append(time.perf_counter())
        return {"n": call["i"]}

    copy = path
    if os.path.exists(path):
        copy = path + ".copy"
        shutil.copyfile(path, copy)
    with Journal.open(copy, "batch") as journal, obelisk.gc_tuned(freeze=True):
        start = time.perf_counter()  # the collector tuned as `obelisk resume` tunes it
        obelisk.resume(journal, "R", activities={"step": mark})
    return first[0] - start


def take_over(folder: Folder) -> float:
    """Seconds from an owner's death (SIGKILL of an ``obelisk run`` process with a 1 s
    lease, mid-run) to a worker's first activity of the run it took over."""
    path = target(folder, "owner.db")
    plan_path = os.path.join(tempfile.mkdtemp(), "plan.json")
    import durable_activities as acts

    with open(plan_path, "w", encoding="utf-8") as handle:
        json.dump(acts.plan_file(4, 50), handle)
    counts = plan_path + ".counts"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(HERE, "..", "tests"),
                                                        os.path.join(HERE, "..")]),
           "OBELISK_TEST_COUNTS": counts, "OBELISK_TEST_DELAY": "0.01"}
    owner = subprocess.Popen([sys.executable, "-m", "obelisk", "run", plan_path,
                              "--activities", "durable_activities:ACTIVITIES", "--journal",
                              path, "--run", "R", "--lease", "1"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not os.path.exists(counts) or len(pathlib.Path(counts).read_text().split()) < 20:
        time.sleep(0.005)
    owner.send_signal(signal.SIGKILL)
    died = time.perf_counter()
    owner.wait()
    first: list[float] = []

    def work(call: dict[str, Any], tool: Any, context: Any) -> Any:
        if not first:
            first.append(time.perf_counter())
            worker.stop()
        return {"n": call.get("prev", {"n": 0})["n"] + call["i"]}

    worker = obelisk.journal.Worker(path, {"work": work, "charge": work}, lease=1.0)
    worker.run()
    return first[0] - died


def report(label: str, folder: Folder, base_slow: float, thousand: obelisk.CompiledPlan,
           slow: Any) -> None:
    """The rows every backend prints: sync of 1,000 calls of 5 ms, the replay rate."""
    sync_slow, _ = journaled(thousand, slow, "sync", folder, "slow-sync.db")
    print(f"{label}: 1,000 calls of 5 ms: unjournaled {base_slow:.3f} s, sync "
          f"{sync_slow:.3f} s, ratio {sync_slow / base_slow:.2f} (target <= 1.5)")
    path = stopped_run(folder)
    rows, reading, decoding, replaying = replay_rate(path)
    seconds = reading + decoding + replaying
    print(f"{label}: resume of a 10,000-call run stopped at its midpoint: {rows:,} events "
          f"replayed in {seconds:.3f} s, {rows / seconds:,.0f} events/s "
          f"(target >= 20,000; median of 5)")
    print(f"  of which: reading the rows {reading:.3f} s, decoding them {decoding:.3f} s, "
          f"the machine's replay {replaying:.3f} s; resume to the first activity, "
          f"compiling the plan included: {first_activity(path):.3f} s")


def postgres() -> tuple[Callable[[str], str] | None, Callable[[], None]]:
    """A function naming fresh journals on a throw-away server, and its stop; (None, a
    no-op) when PostgreSQL or psycopg is not installed."""
    try:
        import pgcluster
        import psycopg
    except ImportError:
        return None, lambda: None
    if pgcluster.binaries() is None:
        return None, lambda: None
    cluster = pgcluster.start(fsync=True)

    def fresh(name: str) -> str:
        schema = "b" + uuid.uuid4().hex[:12]
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return str(cluster.url(schema))

    return fresh, cluster.stop


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        thousand = plan(1000)
        slow = {"step": sleeper(0.005)}
        noop = {"step": sleeper(0)}
        obelisk.run_sync(plan(100), activities=noop)  # warm up
        base_slow = timed(lambda: obelisk.run_sync(thousand, activities=slow))
        report("SQLite", folder, base_slow, thousand, slow)
        # Medians of 5: a run of 40 ms is within the noise of a shared machine.
        base = median([timed(lambda: obelisk.run_sync(thousand, activities=noop))
                       for _ in range(5)])
        batch = median([journaled(thousand, noop, "batch", folder, f"noop-batch-{i}.db")[0]
                        for i in range(5)])
        size_1k = journaled(thousand, noop, "batch", folder, "noop-batch.db")[1]
        sync, _ = journaled(thousand, noop, "sync", folder, "noop-sync.db")
        print(f"SQLite: 1,000 no-op calls: unjournaled {base:.3f} s, batch {batch:.3f} s, "
              f"ratio {batch / base:.2f} (target <= 2; medians of 5); sync {sync:.3f} s, "
              f"ratio {sync / base:.2f}")
        _, size_10k = journaled(plan(10_000), noop, "batch", folder, "noop-batch-10k.db")
        print(f"SQLite: journal size: 1,000 calls {size_1k:,} bytes, 10,000 calls "
              f"{size_10k:,} bytes, ratio {size_10k / size_1k:.2f} (target <= 10)")
        print(f"SQLite: take-over after the owner's death: {take_over(folder):.2f} s "
              "(lease 1 s; target <= 2 s)")
        fresh, stop = postgres()
        if fresh is None:
            print("PostgreSQL: not installed here, no rows (install Debian's postgresql "
                  "and obelisk[postgres])")
            return
        try:
            report("PostgreSQL", fresh, base_slow, thousand, slow)
            print(f"PostgreSQL: take-over after the owner's death: {take_over(fresh):.2f} s "
                  "(lease 1 s; target <= 2 s)")
        finally:
            stop()


if __name__ == "__main__":
    main()
