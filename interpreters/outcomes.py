"""What an invocation produced (an :data:`Outcome`) and what an approval hook answered
(a :data:`Verdict`): the two inputs the run state machine takes from the world."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from attrs import frozen

from obelisk.core.values import MISSING

# -- outcomes: what an invocation produced -----------------------------------------------


@frozen
class Returned:
    """A plain result: goes to the first alternative of ``_outputPath``."""

    value: Any


@frozen
class Chose:
    """An explicit choice of alternative (``obelisk.Branch``, a mock's ``branch``)."""

    path: str
    value: Any


@frozen
class Raised:
    """The activity failed (an exception, a timeout, a mock's ``raise``)."""

    type: str
    message: str
    data: Any = MISSING
    #: A broken contract (NotJSON, NoMock...) never goes to an error branch.
    contract: bool = False


#: What one invocation produced; the machine's ``complete`` takes it apart with ``match``.
Outcome: TypeAlias = Returned | Chose | Raised


# -- approval: what the hook answered ----------------------------------------------------


@frozen
class Approve:
    """Run the call as it is."""


@frozen
class Deny:
    """Do not run the call; it fails with an error of type ``Denied``."""

    reason: str = "denied"


@frozen
class Replace:
    """Run this call instead: its parameters replace the resolved ones (meta-properties
    stay as compiled, since the dataflow graph was built from them)."""

    call: Mapping[str, Any]


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
