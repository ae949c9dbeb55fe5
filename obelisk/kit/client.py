"""AdapterClient: obelisk's side of the adapter protocol, talking to a subprocess.

The command is split like a shell line (no shell runs it) and started on first use. Each
request is one JSON line on the process's standard input; the answer is the next line on
its standard output, read before a deadline. Its standard error passes through.

Whatever goes wrong fails only the request in flight, with an :class:`AdapterError`
naming the request and the problem: a process that exits, hangs past the deadline or
writes a line that is not one JSON object is stopped and started again on the next
request; an answer of the wrong shape leaves the process running.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import subprocess
from collections.abc import Mapping
from time import monotonic
from typing import IO, Any

from obelisk import ObeliskError
from obelisk.kit.protocol import JUDGED_OPS, Op, response_problems

#: The per-request deadline, in seconds, unless told otherwise.
DEFAULT_TIMEOUT = 10.0
#: The deadline of ``hello``, when it is longer than the per-request one: it includes the
#: process's start-up, which can be slow (a virtual machine, imports on a busy host).
START_TIMEOUT = 30.0
#: At most this much of a garbage line is quoted in a message.
QUOTE = 200


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
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._started = False

    # -- the public surface ---------------------------------------------------------------

    def start(self) -> None:
        """Start the process (if it is not running) and read its ``hello``."""
        if self._process is not None:
            return
        try:
            self._process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        except OSError as exc:
            raise AdapterError(f"cannot start the adapter {self.command!r}: "
                               f"{exc.strerror or exc}") from None
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
        """Stop the process: close its input, give it a moment, then kill it."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin:
                process.stdin.close()
            process.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        finally:
            if process.stdout:
                process.stdout.close()

    def __enter__(self) -> AdapterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one exchange ---------------------------------------------------------------------

    def _exchange(self, request: Mapping[str, Any], op: Op,
                  timeout: float | None = None) -> dict[str, Any]:
        self.requests += 1
        what = f"request #{self.requests} ({op.value})"
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        line = json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            process.stdin.write(line.encode("utf-8"))
            process.stdin.flush()
        except OSError:
            self._fail(f"{what}: the adapter exited before it read the request"
                       f"{self._exit_text()}")
        raw = self._read_line(process.stdout, what, timeout or self.timeout)
        try:
            response = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self._fail(f"{what}: the answer is not a line of UTF-8 JSON ({exc}): "
                       f"{_quote(raw)}")
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

    def _read_line(self, stream: IO[bytes], what: str, timeout: float) -> bytes:
        deadline = monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - monotonic()
                if left <= 0 or not selector.select(left):
                    self._fail(f"{what}: no answer within {timeout:g} s (the adapter hangs "
                               "or did not end its answer with a newline)")
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    self._fail(f"{what}: the adapter exited without answering"
                               f"{self._exit_text()}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

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
            process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                try:
                    if stream:
                        stream.close()
                except OSError:
                    pass  # the pipe is already broken; nothing more to flush

    def _fail(self, message: str) -> Any:
        """Stop the process (it starts again on the next request) and fail this request."""
        self._stop()
        raise AdapterError(message + "; the adapter was stopped and starts again for the next "
                           "request", restarted=True)


def _quote(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return repr(text if len(text) <= QUOTE else text[:QUOTE] + "...")
