"""A person's review at the terminal: approve, edit or reject, asked the same way for one
call (``run --approve``, eager ``agent --approve``) and for a whole plan (lazy ``agent
--approve``).

An unknown key asks again; reject asks for a reason; edit opens ``$VISUAL`` or ``$EDITOR``
when both ends are a terminal, else reads one line of JSON. Every verdict says who made it
(:func:`reviewer`), and the run records it with its reason (the approval message, the
journal, ``obelisk history``).
"""

from __future__ import annotations

import contextlib
import enum
import getpass
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any, TextIO

from obelisk.cli.safe import inert, json_text
from obelisk.jsonio import InputError, parse_json

__all__ = ["Choice", "ask_choice", "ask_reason", "edit_json", "prompt", "reviewer"]


class Choice(enum.Enum):
    """What the reviewer chose."""

    APPROVE = "a"
    EDIT = "e"
    REJECT = "r"


#: The keys each choice takes (y and n, and d for "deny", as the prompt took before).
_KEYS = {"a": Choice.APPROVE, "y": Choice.APPROVE, "e": Choice.EDIT, "r": Choice.REJECT,
         "d": Choice.REJECT, "n": Choice.REJECT}


def reviewer() -> str:
    """Who answers at this terminal: ``"alice at the terminal"`` (the user's login name,
    when the system knows one)."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name (a container without passwd)
        return "the terminal"
    return f"{user} at the terminal"


def prompt(err: TextIO, question: str) -> str:
    """Ask ``question`` on ``err`` and read one line of standard input ("" at its end)."""
    # Read standard input at the time of asking: tests (and pipes) replace sys.stdin.
    err.write(question)
    err.flush()
    return sys.stdin.readline()


def ask_choice(err: TextIO, question: str) -> Choice | None:
    """Ask until the answer is approve, edit or reject; None at the end of input."""
    while True:
        answer = prompt(err, question)
        if not answer:
            return None
        choice = _KEYS.get(answer.strip().lower()[:1])
        if choice is not None:
            return choice
        print("please answer a (approve), e (edit) or r (reject)", file=err)


def ask_reason(err: TextIO, default: str) -> str:
    """The reason for a rejection, as typed (``default`` when none is typed)."""
    return whole_characters(prompt(err, "reason: ").strip()) or default


def whole_characters(text: str) -> str:
    """``text`` with each lone surrogate (bytes typed that were not UTF-8, as Python reads
    them from a terminal in the C locale) replaced by U+FFFD: the context holds text."""
    try:  # the bytes as typed, so each one that is not UTF-8 becomes one U+FFFD
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


def edit_json(value: Any, err: TextIO, what: str, kind: type) -> Any | None:
    """``value`` as edited: in ``$VISUAL`` or ``$EDITOR`` when both ends are a terminal,
    else (or when the editor fails) typed as one line of JSON. None (after saying why)
    when the result is not JSON of ``kind`` (an object or an array): the caller asks
    again."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor and sys.stdin.isatty() and err.isatty():
        edited = _in_editor(editor, value)
        if edited is not None:
            return _edited(edited, err, what, kind)
        print(f"the editor failed; type {what} instead", file=err)
    return _edited(prompt(err, f"{what} as one line of JSON: "), err, what, kind)


def _in_editor(editor: str, value: Any) -> str | None:
    """The text the editor saved, or None when it failed."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False,
                                     encoding="utf-8") as handle:
        handle.write(json_text(value) + "\n")
        path = handle.name
    try:
        # The editor is the user's own command line (as git runs it): through the shell.
        if subprocess.call(f'{editor} "{path}"', shell=True) != 0:  # noqa: S602
            return None
        with open(path, encoding="utf-8") as edited:
            return edited.read()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _edited(text: str, err: TextIO, what: str, kind: type) -> Any | None:
    try:
        value = parse_json(text, f"the edited {what}")
    except InputError as exc:  # not JSON, or a lone surrogate ("\ud800"): ask again
        print(exc.render(inert), file=err)
        return None
    if not isinstance(value, kind):
        print(f"the {what} must be a JSON {'object' if kind is dict else 'array'}", file=err)
        return None
    return value


#: What a review answers for each choice: (approve, edit(value), reject(reason)).
Answers = tuple[Callable[[], Any], Callable[[Any], Any], Callable[[str], Any]]


def review(err: TextIO, question: str, editing: tuple[Any, str, type], answers: Answers,
           *, rejected: str) -> Any:
    """Ask ``question`` until the reviewer approves, edits (``editing``: the value shown,
    what it is, its JSON kind) or rejects (with a reason, ``rejected`` when none is
    typed), and give what ``answers`` makes of it; at the end of input, a rejection."""
    approve, edit, reject = answers
    while True:
        choice = ask_choice(err, question)
        if choice is None:
            return reject("no answer (end of input)")
        if choice is Choice.APPROVE:
            return approve()
        if choice is Choice.REJECT:
            return reject(ask_reason(err, rejected))
        shown, what, kind = editing
        edited = edit_json(shown, err, what, kind)
        if edited is not None:
            return edit(edited)
