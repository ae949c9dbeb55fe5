"""The terminal UI of ``obelisk run``: live progress and the approval prompt."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any, TextIO

from obelisk import Approve, Deny, Replace
from obelisk.cli.safe import inert, json_text
from obelisk.jsonio import InputError, parse_json


class Progress:
    """Live progress on a terminal: calls done of total, running, failed.

    The counters change in place: this object is the display's state, owned by the one
    run it watches (activities run one at a time, or on one asyncio loop).
    """

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.done = self.running = self.failed = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The activity ``fn``, counted on the display (``fn`` itself when disabled)."""
        if not self.enabled:
            return fn
        if inspect.iscoroutinefunction(fn):
            async def run_async_fn(*a: Any) -> Any:
                self._start()
                try:
                    return await fn(*a)
                except BaseException:
                    self.failed += 1
                    raise
                finally:
                    self._end()
            return run_async_fn

        def run_fn(*a: Any) -> Any:
            self._start()
            try:
                return fn(*a)
            except BaseException:
                self.failed += 1
                raise
            finally:
                self._end()
        return run_fn

    def _start(self) -> None:
        self.running += 1
        self._show()

    def _end(self) -> None:
        self.running -= 1
        self.done += 1
        self._show()

    def _show(self) -> None:
        self.stream.write(f"\r{self.done}/{self.total} done, {self.running} running, "
                          f"{self.failed} failed   ")
        self.stream.flush()

    def close(self) -> None:
        """End the progress line."""
        if self.enabled:
            self.stream.write("\n")


def terminal_approval(out: TextIO, err: TextIO) -> Callable[[dict[str, Any]], Any]:
    """Ask at the terminal before each call: approve, deny (with a reason), or edit."""

    def ask(call: dict[str, Any]) -> Any:
        print(f"\nabout to run {inert(repr(call.get('_tool')))} with:", file=err)
        print(json_text({k: v for k, v in call.items() if not k.startswith("_")}, stream=err),
              file=err)
        while True:
            answer = _prompt(err, "[a]pprove, [d]eny, [e]dit parameters? ")
            if not answer:
                return Deny("no answer (end of input)")
            choice = answer.strip().lower()[:1]
            if choice in ("a", "y"):
                return Approve()
            if choice in ("d", "n"):
                return Deny(_whole_characters(_prompt(err, "reason: ").strip())
                            or "denied at the terminal")
            if choice == "e":
                params = _edited_parameters(_prompt(err, "new parameters as one line of JSON: "),
                                            err)
                if params is not None:
                    return Replace(params)

    return ask


def _prompt(err: TextIO, question: str) -> str:
    # Read standard input at the time of asking: tests (and pipes) replace sys.stdin.
    err.write(question)
    err.flush()
    return sys.stdin.readline()


def _whole_characters(text: str) -> str:
    """``text`` with each lone surrogate (bytes typed that were not UTF-8, as Python reads
    them from a terminal in the C locale) replaced by U+FFFD: the context holds text."""
    try:  # the bytes as typed, so each one that is not UTF-8 becomes one U+FFFD
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


def _edited_parameters(text: str, err: TextIO) -> dict[str, Any] | None:
    """The edited parameters, or None (after saying why) to ask again."""
    try:
        params = parse_json(text, "the edited parameters")
    except InputError as exc:  # not JSON, or a lone surrogate ("\ud800"): ask again
        print(exc.render(inert), file=err)
        return None
    if not isinstance(params, dict):
        print("the parameters must be a JSON object", file=err)
        return None
    return params
