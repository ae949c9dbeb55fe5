"""``--interpreter dask`` on the command line, against a cluster started as a user starts
one: ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, the tests' folder
on the workers' PYTHONPATH.

A run and an agent on it; the client SIGKILLed in a journaled run, then ``obelisk resume``
finishes the run without running a completed call again; Ctrl-C cancels the run's
futures in the scheduler; ``--dask-workers N`` starts a cluster for the run; the scheduler
lost while a call runs fails that call down its error branch; bad options are usage
errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import dask_activities as acts
import pytest
from daskcluster import HERE, require_dask, worker_env

from obelisk import Journal, recorded
from obelisk.cli import main

ACTIVITIES = "dask_activities:ACTIVITIES"
WAITS = {"type": "object", "properties": {"_tool": {"const": "waits"}}}
STEP = {"type": "object", "properties": {"_tool": {"const": "step"}}}
HERE_TOOL = {"type": "object", "x-obelisk-executor": "local",
             "properties": {"_tool": {"const": "where"}}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """``dask scheduler`` and ``n`` ``dask worker`` processes, as a user starts them."""

    def __init__(self, workers: int) -> None:
        self.address = f"tcp://127.0.0.1:{free_port()}"
        dask = str(pathlib.Path(sys.executable).with_name("dask"))
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.scheduler = subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port",
             self.address.rsplit(":", 1)[1], "--no-dashboard"],
            env={**os.environ, **worker_env()}, **quiet)  # type: ignore[call-overload]
        self.workers = [subprocess.Popen(
            [dask, "worker", self.address, "--nthreads", "1", "--host", "127.0.0.1",
             "--no-dashboard"], env={**os.environ, **worker_env()}, **quiet)  # type: ignore[call-overload]
            for _ in range(workers)]
        self.wait_for(workers)

    def wait_for(self, workers: int) -> None:
        async def ready() -> None:
            from distributed import Client

            async with Client(self.address, asynchronous=True, timeout=20) as client:
                await client.wait_for_workers(workers, timeout=30)

        asyncio.run(ready())

    def scheduler_state(self, what: Any) -> Any:
        """``what(dask_scheduler)`` run in the scheduler."""
        async def ask() -> Any:
            from distributed import Client

            async with Client(self.address, asynchronous=True, timeout=20) as client:
                return await client.run_on_scheduler(what)

        return asyncio.run(ask())

    def stop(self) -> None:
        for proc in (*self.workers, self.scheduler):
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in (*self.workers, self.scheduler):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    require_dask()
    started = Cluster(2)
    try:
        yield started
    finally:
        started.stop()


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def obelisk(*argv: str, cwd: pathlib.Path) -> subprocess.Popen[str]:
    """``python -m obelisk ARGV`` in ``cwd``, importing the tests' activities."""
    env = {**os.environ, **worker_env(), "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}
    return subprocess.Popen([sys.executable, "-m", "obelisk", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def write(path: pathlib.Path, data: Any) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def lines(path: pathlib.Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def wait_for_lines(path: pathlib.Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while len(lines(path)) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, lines(path)
        time.sleep(0.02)


@pytest.mark.slow
def test_a_run_on_the_cluster(cluster: Cluster, tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path / "plan.json", {"plan": [
        {"_tool": "step", "i": 1, "_outputPath": "†s.a"},
        {"_tool": "step", "i": 2, "prev": "†s.a", "_outputPath": "†s.b"},
        {"_tool": "where", "_outputPath": "†s.w"}]})
    code, out, err = cli("run", plan, "--activities", ACTIVITIES, "--interpreter", "dask",
                         "--dask-scheduler", cluster.address, "--out", str(tmp_path / "c.json"),
                         "--events", str(tmp_path / "run.jsonl"))
    assert code == 0, err
    assert "status: completed" in out
    events = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert sorted(e["call"] for e in events if e["type"] == "call_finished") == [0, 1, 2]
    assert events[-1]["type"] == "run_ended" and events[-1]["status"] == "completed"
    final = json.loads((tmp_path / "c.json").read_text())
    values = {m["_outputPath"]: m["data"] for m in final}
    assert values["†s.b"] == {"b": {"n": 3}}
    assert values["†s.w"]["w"]["pid"] not in (os.getpid(), None)


@pytest.mark.slow
def test_an_agent_on_the_cluster(cluster: Cluster, tmp_path: pathlib.Path) -> None:
    agent = write(tmp_path / "agent.json", {"context": [], "tools": [
        {"type": "object", "properties": {"_tool": {"const": "where"}}}]})
    script = write(tmp_path / "script.json", [
        {"calls": [{"_tool": "where", "_outputPath": "†s.w"}], "output": None},
        {"calls": [], "output": "†s.w.pid"}])
    code, out, err = cli("agent", agent, "--llm", "script:" + script, "--json",
                         "--activities", ACTIVITIES, "--interpreter", "dask",
                         "--dask-scheduler", cluster.address)
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "completed" and result["output"] not in (os.getpid(), None)


@pytest.mark.slow
def test_a_killed_client_resumes_on_the_cluster(cluster: Cluster,
                                                tmp_path: pathlib.Path) -> None:
    log, go, db = tmp_path / "log", tmp_path / "go", tmp_path / "j.db"
    steps = [{"_tool": "step", "i": i, "log": str(log), "_outputPath": f"†s.k{i}",
              **({"prev": f"†s.k{i - 1}"} if i else {})} for i in range(3)]
    plan = write(tmp_path / "plan.json", {"plan": [
        *steps,
        {"_tool": "waits", "i": 3, "log": str(log), "go": str(go), "after": "†s.k2",
         "_outputPath": "†s.w"},
        {"_tool": "step", "i": 4, "log": str(log), "prev": "†s.k2", "after": "†s.w",
         "_outputPath": "†s.k4"}]})
    proc = obelisk("run", plan, "--activities", ACTIVITIES, "--interpreter", "dask",
                   "--dask-scheduler", cluster.address, "--journal", str(db), "--run", "r",
                   cwd=tmp_path)
    wait_for_lines(log, 4, proc)  # three steps recorded, the fourth call running
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    go.touch()
    code, _, err = cli("resume", str(db), "--activities", ACTIVITIES)
    assert code == 2
    assert "run r was recorded with --interpreter dask: give --dask-scheduler" in err
    code, out, err = cli("resume", str(db), "--activities", ACTIVITIES,
                         "--dask-scheduler", cluster.address,
                         "--events", str(tmp_path / "resume.jsonl"))
    assert code == 0, err
    assert "status: completed" in out
    told = [json.loads(line) for line in (tmp_path / "resume.jsonl").read_text().splitlines()]
    assert told[0]["run"] == "r" and told[0]["resumed"] is True
    finished = [(e["call"], e.get("replayed", False)) for e in told
                if e["type"] == "call_finished"]  # what had finished, retold; then the rest
    assert finished == [(0, True), (1, True), (2, True), (3, False), (4, False)]
    keys = [line[1] for line in lines(log)]
    # The steps that had finished ran once; the call in flight ran again with its key.
    assert keys == ["r//0/0/", "r//0/1/", "r//0/2/", "r//0/3/", "r//0/3/", "r//0/4/"]
    with Journal.open(db) as journal:
        assert recorded(journal, "r").options["interpreter"] == "dask"


@pytest.mark.slow
def test_ctrl_c_cancels_the_futures(cluster: Cluster, tmp_path: pathlib.Path) -> None:
    log, go = tmp_path / "log", tmp_path / "go"
    plan = write(tmp_path / "plan.json", {"plan": [
        {"_tool": "waits", "i": i, "log": str(log), "go": str(go), "_outputPath": f"†s.w{i}"}
        for i in range(2)]})
    before = sum(cluster.scheduler_state(acts.cancels))
    proc = obelisk("run", plan, "--activities", ACTIVITIES, "--interpreter", "dask",
                   "--dask-scheduler", cluster.address, cwd=tmp_path)
    wait_for_lines(log, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    go.touch()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert sum(cluster.scheduler_state(acts.cancels)) - before == 2  # both futures, cancelled
    assert cluster.scheduler_state(acts.waiting_keys) == []


@pytest.mark.slow
def test_a_local_cluster_for_the_run(tmp_path: pathlib.Path) -> None:
    require_dask()
    plan = write(tmp_path / "plan.json", {"plan": [
        {"_tool": "where", "_outputPath": "†s.a"}, {"_tool": "where", "_outputPath": "†s.b"}]})
    proc = obelisk("run", plan, "--activities", ACTIVITIES, "--interpreter", "dask",
                   "--dask-workers", "2", "--out", "c.json", cwd=tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    pids = {m["data"][m["_outputPath"][-1]]["pid"]
            for m in json.loads((tmp_path / "c.json").read_text())}
    assert proc.pid not in pids and None not in pids


@pytest.mark.slow
def test_a_lost_scheduler_fails_the_calls_in_flight(tmp_path: pathlib.Path) -> None:
    require_dask()
    own = Cluster(1)
    log, go = tmp_path / "log", tmp_path / "go"
    plan = write(tmp_path / "plan.json", {"tools": [WAITS, HERE_TOOL, STEP], "plan": [
        {"_tool": "waits", "i": 1, "log": str(log), "go": str(go),
         "_outputPath": "†s.w || †e.w"},
        {"_tool": "where", "gate": "†e.w.type", "_outputPath": "†s.after"},
        {"_tool": "step", "i": 2, "gate": "†e.w.type", "_outputPath": "†s.later || †e.later"}]})
    try:
        proc = obelisk("run", plan, "--activities", ACTIVITIES, "--interpreter", "dask",
                       "--dask-scheduler", own.address, "--out", "c.json", cwd=tmp_path)
        wait_for_lines(log, 1, proc)
        own.scheduler.kill()
        out, err = proc.communicate(timeout=60)
    finally:
        go.touch()
        own.stop()
    assert proc.returncode == 0, err  # the failure took the error branch
    assert "Traceback" not in err
    values = {m["_outputPath"]: m["data"] for m in json.loads((tmp_path / "c.json").read_text())}
    assert values["†e.w"]["w"]["type"] == "SchedulerLost"
    assert "lost the Dask scheduler" in values["†e.w"]["w"]["message"]
    assert values["†s.after"]["after"]["pid"] == proc.pid  # the call placed here ran
    # A call sent while the client tried to reconnect (5 s here) was never sent.
    assert values["†e.later"]["later"]["type"] == "SchedulerLost"
    assert "could not reach the Dask scheduler" in values["†e.later"]["later"]["message"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--dask-workers", "2"], "--dask-workers needs --interpreter dask"),
    (["--dask-scheduler", "tcp://127.0.0.1:1"], "--dask-scheduler needs --interpreter dask"),
    (["--interpreter", "dask"], "--interpreter dask needs a cluster: --dask-scheduler"),
    (["--interpreter", "dask", "--dask-workers", "0"], "--dask-workers must be at least 1"),
    (["--interpreter", "dask", "--dask-workers", "1", "--dask-scheduler", "tcp://h:1"],
     "--interpreter dask needs a cluster"),
])
def test_dask_options_are_checked(tmp_path: pathlib.Path, argv: list[str],
                                  message: str) -> None:
    plan = write(tmp_path / "plan.json", {"plan": [{"_tool": "step", "i": 1}]})
    code, _, err = cli("run", plan, "--activities", ACTIVITIES, *argv)
    assert code == 2 and message in err, err


@pytest.mark.slow
def test_an_unreachable_scheduler_is_bad_input(tmp_path: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    require_dask()
    import dask

    plan = write(tmp_path / "plan.json", {"plan": [{"_tool": "step", "i": 1}]})
    address = f"tcp://127.0.0.1:{free_port()}"
    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        code, _, err = cli("run", plan, "--activities", ACTIVITIES, "--interpreter", "dask",
                           "--dask-scheduler", address)
    assert code == 2
    assert f"error: cannot reach the Dask scheduler at {address}" in err
    assert "start it with `dask scheduler`" in err


def test_workers_find_the_tests_activities() -> None:
    assert (HERE / "dask_activities.py").exists()
