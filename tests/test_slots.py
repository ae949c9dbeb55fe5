"""interpreters/slots.py: frozen attrs instances made through their slots."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from obelisk.interpreters.result import CallOutcome
from obelisk.interpreters.slots import maker


@attrs.frozen
class Three:
    a: Any
    b: Any = 2
    c: Any = attrs.field(default=3, eq=False)


@attrs.define(slots=False, frozen=True)
class NotSlotted:
    a: Any


@attrs.frozen
class Validated:
    a: int = attrs.field(validator=attrs.validators.instance_of(int))


@attrs.frozen
class Converted:
    a: Any = attrs.field(converter=str)


@attrs.frozen
class Hooked:
    a: Any

    def __attrs_post_init__(self) -> None:
        pass


class Plain:
    def __init__(self, a: Any) -> None:
        self.a = a


def test_a_slotted_frozen_class_gets_a_maker_of_its_own() -> None:
    make = maker(Three)
    assert make is not Three
    made = make(1, [2], "x")
    assert type(made) is Three and made == Three(1, [2], "x") and repr(made) == repr(Three(1, [2], "x"))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.a = 5  # type: ignore[misc]
    assert attrs.evolve(made, a=9) == Three(9, [2], "x")


@pytest.mark.parametrize("cls", [NotSlotted, Validated, Converted, Hooked, Plain])
def test_a_class_whose_init_does_more_is_its_own_maker(cls: type) -> None:
    assert maker(cls) is cls


@given(st.lists(st.integers() | st.text() | st.none(), min_size=3, max_size=3))
def test_made_instances_equal_the_classs_own(values: list[Any]) -> None:
    assert maker(Three)(*values) == Three(*values)


def test_the_run_results_call_outcomes_are_made_through_their_slots() -> None:
    from obelisk.interpreters import result

    assert result._new_outcome is not CallOutcome
