"""core/slots.py: makers of frozen attrs instances, written with slot setters or a
``__dict__`` setter, kept only when they make what the class's ``__init__`` makes."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from obelisk.core import slots
from obelisk.interpreters import calls, outcomes, result, state


@attrs.frozen
class Three:
    a: Any
    b: Any = 2
    c: Any = attrs.field(default=3, eq=False)


_set_a, _set_b, _set_c = slots.slot_setters(Three)


def make_three(*, a: Any, b: Any, c: Any) -> Three:
    made = slots.new(Three)
    _set_a(made, a)
    _set_b(made, b)
    _set_c(made, c)
    return made


@attrs.define(slots=False, frozen=True)
class NotSlotted:
    a: Any
    b: Any = 2

    @property
    def both(self) -> tuple[Any, Any]:
        return self.a, self.b


_set_not_slotted = slots.dict_setter(NotSlotted)


def make_not_slotted(*, a: Any, b: Any) -> NotSlotted:
    made = slots.new(NotSlotted)
    _set_not_slotted(made, {"a": a, "b": b})
    return made


@attrs.frozen
class Validated:
    a: int = attrs.field(validator=attrs.validators.instance_of(int))


@attrs.frozen
class Converted:
    a: Any = attrs.field(converter=str)


@attrs.frozen(cache_hash=True)
class CachedHash:
    """attrs' __init__ also clears a hidden slot (the cached hash): a maker would not."""

    a: Any


def bare(cls: type) -> Any:
    """A maker that only sets ``a`` through its slot (what a careless maker would do)."""
    (set_a,) = slots.slot_setters(cls)

    def make(*, a: Any) -> Any:
        made = slots.new(cls)
        set_a(made, a)
        return made

    return make


def test_a_maker_that_sets_every_slot_is_kept() -> None:
    make = slots.checked(Three, make_three)
    assert make is make_three
    made = make(a=1, b=[2], c="x")
    assert type(made) is Three and made == Three(1, [2], "x") and repr(made) == repr(Three(1, [2], "x"))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.a = 5  # type: ignore[misc]
    assert attrs.evolve(made, a=9) == Three(9, [2], "x")


def test_a_dict_built_whole_is_kept_for_a_class_without_slots() -> None:
    make = slots.checked(NotSlotted, make_not_slotted)
    assert make is make_not_slotted
    made, reference = make(a=1, b=[2]), NotSlotted(1, [2])
    assert type(made) is NotSlotted and made == reference and repr(made) == repr(reference)
    assert list(vars(made).items()) == list(vars(reference).items())  # keys in order too
    assert made.both == (1, [2])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.a = 5  # type: ignore[misc]


@pytest.mark.parametrize("cls", [CachedHash, Validated, Converted])
def test_a_class_whose_init_does_more_is_its_own_maker(cls: type) -> None:
    assert slots.checked(cls, bare(cls)) is cls
    assert slots.checked(cls, bare(cls))(a=1) == cls(a=1)  # the same keywords


def test_a_maker_that_misplaces_a_field_is_refused() -> None:
    def swapped(*, a: Any, b: Any, c: Any) -> Three:
        return make_three(a=b, b=a, c=c)

    assert slots.checked(Three, swapped) is Three


@given(st.lists(st.integers() | st.text() | st.none(), min_size=3, max_size=3))
def test_made_instances_equal_the_classs_own(values: list[Any]) -> None:
    a, b, c = values
    assert make_three(a=a, b=b, c=c) == Three(a, b, c)
    assert vars(make_not_slotted(a=a, b=b)) == vars(NotSlotted(a, b))


def test_the_runs_values_are_made_by_their_makers() -> None:
    # The check at import passed for each: the run state (its __dict__ built whole), the
    # invocation of a call that starts, the outcome of one that returns, a result's call
    # outcomes (slots).
    assert state.new_state is not state.RunState and "__dict__" in vars(state.RunState)
    assert calls.new_invocation is not calls.Invocation
    assert outcomes.returned is not outcomes.Returned
    assert outcomes.returned(value=5) == outcomes.Returned(5)
    assert result.new_outcome is not result.CallOutcome
