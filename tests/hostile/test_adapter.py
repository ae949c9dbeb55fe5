"""The adapter client against adapters that misbehave (issue 26, item 11).

Before: writing a request had no deadline (an adapter that stopped reading hung
``conformance --against`` for ever once a request passed 64 KiB); an adapter started
through a wrapper (``sh -c``, npm) left its engine process running after a hung vector,
holding obelisk's output open; one extra output line shifted every later answer by one
request; ``--against ""`` tested obelisk against itself and exited 0. Real processes and
pipes throughout; a test that would hang is bounded by a guard thread (never a timing
assertion).
"""

from __future__ import annotations

import io
import json
import pathlib
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from obelisk.cli import main
from obelisk.kit.client import AdapterClient, AdapterError

ADAPTER = pathlib.Path(__file__).resolve().parent / "adapters" / "unruly.py"
OBELISK = pathlib.Path(sys.executable).parent / "obelisk"
GOOD = {"op": "resolve", "context": [{"type": "state", "a": 1}], "ref": "†state.a",
        "instance": None}
#: Long enough to leave nothing to wait for, short enough to fail at once when it hangs.
GUARD = 60.0


def command(*args: str, wrapped: bool = False) -> str:
    line = " ".join(map(shlex.quote, [sys.executable, str(ADAPTER), *args]))
    # "; exit": sh keeps running as the parent of python instead of exec'ing it.
    return f"sh -c {shlex.quote(line + '; exit $?')}" if wrapped else line


def bounded(work: Callable[[], Any]) -> Any:
    """``work()``, or a failure if it has not returned within GUARD seconds."""
    found: list[Any] = []
    thread = threading.Thread(target=lambda: found.append(_outcome(work)), daemon=True)
    thread.start()
    thread.join(GUARD)
    assert found, "hung"
    if isinstance(found[0], BaseException):
        raise found[0]
    return found[0]


def _outcome(work: Callable[[], Any]) -> Any:
    try:
        return work()
    except BaseException as exc:  # noqa: BLE001 - handed back to the test's thread
        return exc


def ended(pid: int) -> bool:
    """Whether a process is dead (gone, or a zombie nobody reaped), waiting for a SIGKILL
    to take effect (bounded by GUARD)."""
    stop = time.monotonic() + GUARD
    while state_of(pid) not in ("gone", "Z"):
        if time.monotonic() > stop:
            return False
        time.sleep(0.01)
    return True


def state_of(pid: int) -> str:
    """A process's state letter ("Z": a zombie), or "gone"."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return "gone"


@pytest.mark.slow
def test_an_adapter_that_stops_reading_fails_its_request_within_the_deadline() -> None:
    big = {**GOOD, "context": [{"type": "state", "a": 1, "pad": "x" * 300_000}]}
    with AdapterClient(command("--deaf"), timeout=1) as client:
        client.start()
        caught = bounded(lambda: pytest.raises(AdapterError, client.ask, big))
        message = str(caught.value)
        assert message.startswith("request #2 (resolve): the adapter did not read the request "
                                  "within 1 s"), message
        assert "bytes were left to write" in message and caught.value.restarted


@pytest.mark.slow
@pytest.mark.skipif(not pathlib.Path("/proc").is_dir(), reason="needs /proc to see processes")
def test_a_hung_adapter_behind_a_wrapper_leaves_no_process(tmp_path: pathlib.Path) -> None:
    pidfile = tmp_path / "pid"
    with AdapterClient(command("--pidfile", str(pidfile), wrapped=True), timeout=1) as client:
        assert client.ask(GOOD) == {"value": 1}
        engine = int(pidfile.read_text())
        assert state_of(engine) not in ("gone", "Z")
        with pytest.raises(AdapterError, match="no answer within 1 s"):
            bounded(lambda: client.ask({**GOOD, "ref": "†hang"}))
        assert ended(engine)  # killed with its wrapper, not left behind
        pidfile.unlink()
        assert client.ask(GOOD) == {"value": 1}  # started again
        engine = int(pidfile.read_text())
    assert ended(engine)  # and closing stops the whole group too


@pytest.mark.slow
def test_the_command_lines_output_closes_when_it_exits(tmp_path: pathlib.Path) -> None:
    # A vector whose adapter hangs, behind a wrapper: obelisk reports it and exits, and its
    # output pipes close then (a leaked engine process used to hold them open).
    vector = tmp_path / "hang.json"
    vector.write_text(json.dumps({"id": "hangs", "context": [], "cases": [
        {"ref": "†hang", "missing": True}]}))
    process = subprocess.Popen(
        [str(OBELISK), "conformance", str(vector), "--timeout", "1", "--against",
         command(wrapped=True)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, _ = bounded(process.communicate)
    assert process.returncode == 1
    assert b"no answer within 1 s" in out and b"0 passed, 1 failed" in out


@pytest.mark.slow
def test_a_line_that_answers_no_request_in_flight_fails_only_that_request() -> None:
    with AdapterClient(command()) as client:
        assert client.ask({**GOOD, "ref": "†extra"}) == {"missing": True}
        with pytest.raises(AdapterError) as caught:
            client.ask(GOOD)  # reads the stray line (id 1), not its own answer
        message = str(caught.value)
        assert "request #3 (resolve)" in message and "answers no request in flight" in message
        assert caught.value.restarted
        # Started again: every later answer is its own, none shifted.
        for ref, value in [("†state.a", 1), ("†state.nope", None), ("†state.a", 1)]:
            answer = client.ask({**GOOD, "ref": ref})
            assert answer == ({"value": value} if value is not None else {"missing": True})
        assert client.restarts == 1


@pytest.mark.slow
def test_a_stray_line_without_ids_fails_the_next_request_not_every_later_one() -> None:
    with AdapterClient(command("--no-ids")) as client:
        client.ask({**GOOD, "ref": "†extra"})
        with pytest.raises(AdapterError, match="answers no request in flight, before this "
                                               "one was sent"):
            client.ask(GOOD)
        assert client.ask({**GOOD, "ref": "†state.nope"}) == {"missing": True}
        assert client.ask(GOOD) == {"value": 1}


@pytest.mark.slow
def test_an_echoed_id_must_be_the_requests() -> None:
    with AdapterClient(command()) as client:
        with pytest.raises(AdapterError, match=r"answered id 1001, but the request in flight "
                                               r"is id 1"):
            client.ask({**GOOD, "ref": "†wrong-id"})
        assert client.ask(GOOD) == {"value": 1}


@pytest.mark.slow
def test_requests_carry_ids_counting_up_and_obelisk_echoes_them() -> None:
    answers = []
    with subprocess.Popen([str(OBELISK), "adapter"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as process:
        requests = [{"op": "hello"}, {**GOOD, "id": 1}, {**GOOD, "id": 2, "ref": "†x."}]
        out, _ = process.communicate(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
        answers = [json.loads(line) for line in out.splitlines()]
    assert "id" not in answers[0] and answers[1] == {"value": 1, "id": 1}
    assert answers[2]["id"] == 2 and answers[2]["error"] == "syntax"
    with AdapterClient(command()) as client:  # an adapter echoing ids passes, ids stripped
        assert [client.ask(GOOD) for _ in range(3)] == [{"value": 1}] * 3


@pytest.mark.parametrize("against", ["", "   "])
def test_conformance_against_an_empty_command_is_refused(against: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["conformance", "-q", "--against", against], out=out, err=err) == 2
    assert "--against needs the command that starts the adapter" in err.getvalue()
    assert "passed" not in out.getvalue()  # nothing was judged
