"""What an invocation produced (an :data:`Outcome`) and what an approval hook answered
(a :data:`Verdict`): the two inputs the run state machine takes from the world."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from attrs import field, frozen

from obelisk.core import slots
from obelisk.core.values import MISSING, without_surrogates


def _text(value: Any, default: str = "") -> str:
    # Text that can go into a context: a string as it is (lone surrogates escaped), other
    # objects by their str(), and ``default`` for None, "" or a str() that fails.
    if value is None:
        return default
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception:  # noqa: BLE001 - a broken __str__ must not crash the run
            return default or type(value).__name__
        if not isinstance(value, str):  # pragma: no cover - str() returns a str
            return default
    return without_surrogates(str.__str__(value)) or default


def _reason(value: Any) -> str:
    return _text(value, "denied")

# -- outcomes: what an invocation produced -----------------------------------------------


@frozen
class Returned:
    """A plain result: goes to the first alternative of ``_outputPath``."""

    value: Any


_set_value, = slots.slot_setters(Returned)


def _returned(*, value: Any) -> Returned:
    # Returned(value=...) through its slot: one per call that returns.
    made = slots.new(Returned)
    _set_value(made, value)
    return made


#: How a returned value becomes its outcome (see :mod:`obelisk.core.slots`).
returned = slots.checked(Returned, _returned)


@frozen
class Chose:
    """An explicit choice of alternative (``obelisk.Branch``, a mock's ``branch``)."""

    path: str
    value: Any


@frozen
class Raised:
    """The activity failed (an exception, a timeout, a mock's ``raise``).

    ``type`` and ``message`` are made text that a context can hold (lone surrogates
    escaped, other objects by their ``str()``).
    """

    type: str = field(converter=_text)
    message: str = field(converter=_text)
    data: Any = MISSING
    #: A broken contract (NotJSON, NoMock...) never goes to an error branch.
    contract: bool = False


#: What one invocation produced; the machine's ``complete`` takes it apart with ``match``.
Outcome: TypeAlias = Returned | Chose | Raised


# -- approval: what the hook answered ----------------------------------------------------


def _who(value: Any) -> str | None:
    """Who decided, as text (None: not said)."""
    return None if value is None else _text(value, "someone")


def _why(value: Any) -> str | None:
    """An optional reason, as text (None or "": not given)."""
    return _text(value) or None


# Every verdict may say who made it (``by``: "alice at the terminal", "the MCP client")
# and why; both are recorded with it (the approval message, the journal, ``history``).


@frozen
class Approve:
    """Run the call as it is."""

    by: str | None = field(default=None, converter=_who, kw_only=True)
    reason: str | None = field(default=None, converter=_why, kw_only=True)


@frozen
class Deny:
    """Do not run the call; it fails with an error of type ``Denied``.

    The reason is text: ``None`` or ``""`` become ``"denied"``, other objects their
    ``str()``, and lone surrogates are escaped.
    """

    reason: str = field(default="denied", converter=_reason)
    by: str | None = field(default=None, converter=_who, kw_only=True)


@frozen
class Replace:
    """Run this call instead: its parameters replace the resolved ones (meta-properties
    stay as compiled, since the dataflow graph was built from them)."""

    call: Mapping[str, Any]
    by: str | None = field(default=None, converter=_who, kw_only=True)
    reason: str | None = field(default=None, converter=_why, kw_only=True)


#: What an approval hook decided about one ready call.
Verdict: TypeAlias = Approve | Deny | Replace


def as_verdict(answer: Any) -> Verdict:
    """An approval hook's answer as a Verdict: ``True``/``None`` approve, ``False`` denies,
    a string denies with that reason, a dict replaces the call.

    Raises ``TypeError`` for any other answer.
    """
    if isinstance(answer, (Approve, Deny, Replace)):
        return answer
    if answer is True or answer is None:
        return Approve()
    if answer is False:
        return Deny()
    if isinstance(answer, str):
        return Deny(answer)
    if isinstance(answer, Mapping):
        return Replace(answer)
    raise TypeError(
        f"an approval hook returns True, False, a reason string, a replacement call, or "
        f"Approve/Deny/Replace, not {type(answer).__name__}"
    )
