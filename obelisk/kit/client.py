"""AdapterClient: obelisk's side of the adapter protocol, talking to a subprocess.

The command is split like a shell line (no shell runs it) and started on first use, in a
process group of its own. Each request is one JSON line on the process's standard input,
carrying an ``id`` (counting up from 1; ``hello`` has none); the answer is the next line on
its standard output. Writing the request and reading the answer share one deadline, so
an adapter that stops reading cannot hang obelisk either. Its standard error passes
through.

Whatever goes wrong fails only the request in flight, with an :class:`AdapterError`
naming the request and the problem: a process that exits, hangs past the deadline, writes
a line that is not one JSON object, or a line that answers no request in flight (an
echoed ``id`` that is not the request's, or output waiting before a request is sent) is
stopped, with every process of its group (a wrapper such as ``sh -c`` or ``npm`` leaves
none behind), and started again on the next request; an answer of the wrong shape
leaves the process running. Answers without ``id`` are matched in order.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shlex
import signal
import subprocess
from collections.abc import Mapping
from time import monotonic, sleep
from typing import Any

from obelisk import ObeliskError
from obelisk.kit.protocol import JUDGED_OPS, Op, response_problems

#: The per-request deadline, in seconds, unless told otherwise.
DEFAULT_TIMEOUT = 10.0
#: The deadline of ``hello``, when it is longer than the per-request one: it includes the
#: process's start-up, which can be slow (a virtual machine, imports on a busy host).
START_TIMEOUT = 30.0
#: At most this much of a garbage line is quoted in a message.
QUOTE = 200
#: How long a closed adapter may take to exit before its process group is killed.
CLOSE_GRACE = 1.0


class AdapterError(ObeliskError):
    """One request could not be answered: the adapter crashed, hung, wrote garbage or an
    answer of the wrong shape. ``restarted`` says whether the process was stopped."""

    def __init__(self, message: str, *, restarted: bool = False) -> None:
        self.restarted = restarted
        super().__init__(message)


class AdapterClient:
    """A running adapter: ``ask`` sends one request and returns its validated answer.

    Use it as a context manager, or call :meth:`close`. ``name``, ``version`` and ``ops``
    come from the adapter's ``hello``, sent when the process starts. Raises
    :class:`AdapterError` (an :class:`~obelisk.ObeliskError`) for every failure.
    """

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise AdapterError(f"cannot split the adapter command {command!r}: {exc}") from None
        if not self.argv:
            raise AdapterError("the adapter command is empty")
        if not timeout > 0:
            raise AdapterError(f"the timeout must be a positive number of seconds, got {timeout}")
        self.command = command
        self.timeout = timeout
        self.name = ""
        self.version = ""
        self.ops: frozenset[str] = frozenset()
        self.requests = 0
        self.restarts = 0
        self._last_id = 0  # the id of the newest request sent (hello has none)
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._started = False

    # -- the public surface ---------------------------------------------------------------

    def start(self) -> None:
        """Start the process (if it is not running) and read its ``hello``."""
        if self._process is not None:
            return
        try:
            # A session of its own: its whole process group can be stopped (a wrapper's
            # children too), and Ctrl-C at the terminal reaches obelisk, which closes it.
            self._process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                start_new_session=True)
        except OSError as exc:
            raise AdapterError(f"cannot start the adapter {self.command!r}: "
                               f"{exc.strerror or exc}") from None
        assert self._process.stdin is not None
        os.set_blocking(self._process.stdin.fileno(), False)  # writes wait in select()
        self._buffer = b""
        if self._started:
            self.restarts += 1
        self._started = True
        try:
            hello = self._exchange({"op": "hello"}, Op.HELLO,
                                   max(self.timeout, START_TIMEOUT))
        except AdapterError:
            self._stop()  # a process whose hello is wrong is not used at all
            raise
        self.name, self.version = str(hello["name"]), str(hello["version"])
        self.ops = frozenset(o for o in hello["ops"] if o in {op.value for op in JUDGED_OPS})

    def supports(self, op: Op | str) -> bool:
        """Whether the adapter listed ``op`` in its ``hello`` (starting it if needed)."""
        self.start()
        return Op(op).value in self.ops

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Send ``request`` and return the adapter's answer, checked against its op."""
        self.start()
        return self._exchange(request, Op(request["op"]))

    def close(self) -> None:
        """Stop the process: close its input, give it a moment to exit, then kill what is
        left of its process group."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin:
                process.stdin.close()
        except OSError:
            pass  # the pipe is already broken; nothing more to flush
        _exited(process, CLOSE_GRACE)
        _end(process)

    def __enter__(self) -> AdapterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one exchange ---------------------------------------------------------------------

    def _exchange(self, request: Mapping[str, Any], op: Op,
                  timeout: float | None = None) -> dict[str, Any]:
        self.requests += 1
        what = f"request #{self.requests} ({op.value})"
        if op is not Op.HELLO:
            self._last_id += 1
            request = {**request, "id": self._last_id}
            if self._buffer or self._readable():
                self._fail(f"{what}: the adapter wrote a line that answers no request in "
                           f"flight, before this one was sent: {_quote(self._buffer)}")
        line = json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n"
        raw = self._send(line.encode("utf-8"), what, timeout or self.timeout)
        try:
            response = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self._fail(f"{what}: the answer is not a line of UTF-8 JSON ({exc}): "
                       f"{_quote(raw)}")
        if op is not Op.HELLO and isinstance(response, dict) and "id" in response:
            echoed = response.pop("id")
            if echoed != request["id"]:
                self._fail(f"{what}: the adapter answered id {_quote_json(echoed)}, but the "
                           f"request in flight is id {request['id']}: a line that answers no "
                           f"request in flight")
        problems = response_problems(op, response)
        if problems:
            if not isinstance(response, dict):
                # A JSON value that is not an object may be part of a multi-line answer:
                # the stream cannot be trusted, so start again.
                self._fail(f"{what}: {'; '.join(problems)}: {_quote(raw)}")
            raise AdapterError(f"{what}: the answer has the wrong shape: {'; '.join(problems)}"
                               f" (answer: {_quote(raw)})")
        assert isinstance(response, dict)
        return response

    def _send(self, data: bytes, what: str, timeout: float) -> bytes:
        """Write ``data`` and read the next answer line, both before one deadline; the
        adapter's output is read while the request is written, so neither side waits
        for the other with a full pipe."""
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin.fileno(), process.stdout.fileno()
        pending = memoryview(data)
        deadline = monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            selector.register(stdin, selectors.EVENT_WRITE)
            while pending or b"\n" not in self._buffer:
                left = deadline - monotonic()
                events = selector.select(left) if left > 0 else []
                if not events:
                    self._fail(f"{what}: " + (
                        f"the adapter did not read the request within {timeout:g} s (it hangs, "
                        f"or stopped reading its input); {len(pending)} of {len(data)} bytes "
                        "were left to write" if pending else
                        f"no answer within {timeout:g} s (the adapter hangs or did not end "
                        "its answer with a newline)"))
                for key, _ in events:
                    if key.fd == stdout:
                        chunk = os.read(stdout, 65536)
                        if not chunk:
                            self._fail(f"{what}: the adapter exited without answering"
                                       f"{self._exit_text()}")
                        self._buffer += chunk
                    elif pending:
                        pending = pending[self._write(stdin, pending, what):]
                        if not pending:
                            selector.unregister(stdin)
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _write(self, fd: int, pending: memoryview, what: str) -> int:
        try:
            return os.write(fd, pending[:65536])
        except BlockingIOError:
            return 0
        except OSError:
            self._fail(f"{what}: the adapter exited before it read the request"
                       f"{self._exit_text()}")
        return 0  # pragma: no cover - _fail raises

    def _readable(self) -> bool:
        """Whether the adapter has written something nobody asked for yet."""
        process = self._process
        assert process is not None and process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout.fileno(), selectors.EVENT_READ)
            if not selector.select(0):
                return False
        chunk = os.read(process.stdout.fileno(), 65536)
        self._buffer += chunk
        return bool(chunk)

    def _exit_text(self) -> str:
        process = self._process
        if process is None:
            return ""
        try:
            code = process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return ""
        return f" (exit status {code})"

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            _end(process)

    def _fail(self, message: str) -> Any:
        """Stop the process (it starts again on the next request) and fail this request."""
        self._stop()
        raise AdapterError(message + "; the adapter was stopped and starts again for the next "
                           "request", restarted=True)


def _exited(process: subprocess.Popen[bytes], grace: float) -> None:
    """Wait up to ``grace`` seconds for ``process`` to exit, without reaping it: while it
    is not reaped, its process group's id cannot be taken by another process."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # pragma: no cover - no waitid: wait by reaping it
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
        return
    deadline = monotonic() + grace
    while monotonic() < deadline:
        try:
            if waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return
        except ChildProcessError:
            return  # already reaped
        sleep(0.01)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and every process of its group (a wrapper's children), reap it,
    and close its pipes."""
    killpg = getattr(os, "killpg", None)
    try:
        # Its own session: the group's id is its pid, which no other group can take while
        # a process of the group is left (and then killing it is what is wanted).
        if killpg is not None:
            killpg(process.pid, signal.SIGKILL)
        elif process.returncode is None:  # pragma: no cover - no process groups
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already
    process.wait()
    for stream in (process.stdin, process.stdout):
        try:
            if stream:
                stream.close()
        except OSError:
            pass  # the pipe is already broken; nothing more to flush


def _quote_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= QUOTE else text[:QUOTE] + "..."


def _quote(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return repr(text if len(text) <= QUOTE else text[:QUOTE] + "...")
