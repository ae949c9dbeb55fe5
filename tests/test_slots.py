"""core/slots.py: frozen attrs instances made without their ``__init__``: through
their slots, or their ``__dict__`` built whole."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from obelisk.core.slots import maker
from obelisk.interpreters.result import CallOutcome


@attrs.frozen
class Three:
    a: Any
    b: Any = 2
    c: Any = attrs.field(default=3, eq=False)


@attrs.define(slots=False, frozen=True)
class NotSlotted:
    a: Any
    b: Any = 2
    c: Any = attrs.field(default=3, eq=False)

    @property
    def both(self) -> tuple[Any, Any]:
        return self.a, self.b


@attrs.define(slots=False, frozen=True)
class DictOverSlots(Three):
    """Fields kept in a slotted base: a dict made whole would put them in the wrong place."""

    d: Any = 4


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


def test_a_frozen_class_without_slots_gets_its_dict_built_whole() -> None:
    make = maker(NotSlotted)
    assert make is not NotSlotted
    made = make(1, [2], "x")
    reference = NotSlotted(1, [2], "x")
    assert type(made) is NotSlotted and made == reference and repr(made) == repr(reference)
    assert list(vars(made).items()) == list(vars(reference).items())  # keys in order too
    assert made.both == (1, [2])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.a = 5  # type: ignore[misc]
    assert attrs.evolve(made, a=9) == NotSlotted(9, [2], "x")


@pytest.mark.parametrize("cls", [DictOverSlots, CachedHash, Validated, Converted, Hooked, Plain])
def test_a_class_whose_init_does_more_is_its_own_maker(cls: type) -> None:
    assert maker(cls) is cls


@given(st.lists(st.integers() | st.text() | st.none(), min_size=3, max_size=3))
def test_made_instances_equal_the_classs_own(values: list[Any]) -> None:
    assert maker(Three)(*values) == Three(*values)
    assert maker(NotSlotted)(*values) == NotSlotted(*values)
    assert vars(maker(NotSlotted)(*values)) == vars(NotSlotted(*values))


def test_the_run_results_call_outcomes_are_made_through_their_slots() -> None:
    from obelisk.interpreters import result

    assert result._new_outcome is not CallOutcome


def test_the_machines_values_are_made_by_makers() -> None:
    # The check at import passed for each: the run state (its __dict__ built whole),
    # the invocation of a call that starts and the outcome of one that returns (slots).
    from obelisk.interpreters import activities, machine, state
    from obelisk.interpreters.calls import Invocation
    from obelisk.interpreters.outcomes import Returned

    assert state.new_state is not state.RunState and "__dict__" in vars(state.RunState)
    assert machine._new_invocation is not Invocation
    assert activities._returned is not Returned
    assert activities._returned(5) == Returned(5)


def test_the_compilers_values_are_made_through_their_slots() -> None:
    # The check at import passed for each: a node, its params and reads, a call's reading
    # and the AST of a plain reference and _outputPath. What they make is what attrs'
    # __init__ makes from the same fields.
    from obelisk import compile_plan
    from obelisk.compiler import parse, plainref, plangraph, reading
    from obelisk.compiler.nodes import Node, Param, Read
    from obelisk.core.ast import FanOut, OutputExpr, Reference

    for made, cls in ((plangraph._new_node, Node), (plangraph._new_param, Param),
                      (plangraph._new_read, Read), (reading._new_info, reading.CallInfo),
                      (reading._new_reading, reading.CallReading),
                      (plainref._new_reference, Reference), (parse._new_output, OutputExpr),
                      (parse._new_fan_out, FanOut)):
        assert made is not cls, cls
    plan = compile_plan([{"_tool": "t", "_outputPath": "†state.a"},
                         {"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}])
    for node in plan.nodes:
        again = Node(**{a.name: getattr(node, a.name) for a in attrs.fields(Node)})
        assert node == again and repr(node) == repr(again) and hash(node) == hash(again)
        for param in node.params:
            assert param == Param(param.pointer, param.path, param.text, param.expr, param.reads)


def test_a_maker_is_built_after_its_warm_up_and_makes_the_same_instances_throughout() -> None:
    # Until WARM_UP instances are made, the class makes them (nothing is compiled, so a
    # short command never pays for it); from then on, the built straight-line code.
    from obelisk.core import slots

    for cls, count in ((Three, 3), (NotSlotted, 3)):
        make = maker(cls)
        assert make.__code__.co_name == "_warming"
        for i in range(slots.WARM_UP + 5):
            values = [i, [i], f"x{i}"][:count]
            made = make(*values)
            assert type(made) is cls and made == cls(*values)
            assert vars(made) == vars(cls(*values)) if cls is NotSlotted else True
            built = make.__code__.co_name == "_built"
            assert built is (i + 1 >= slots.WARM_UP), i
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            made.a = 5  # type: ignore[attr-defined]


def test_built_code_that_fails_its_check_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    from obelisk.core import slots

    make = maker(Three)
    monkeypatch.setattr(slots, "_same", lambda cls, made: False)
    for i in range(slots.WARM_UP + 5):
        assert make(i, 2, 3) == Three(i, 2, 3)
    assert make.__code__.co_name == "_warming"  # the class itself goes on making them


def test_a_maker_warmed_up_by_many_threads_at_once_makes_the_same_instances() -> None:
    # Building is idempotent (no lock): whichever thread builds, every instance is right.
    import threading

    from obelisk.core import slots

    make = maker(Three)
    built: list[Any] = []
    real = slots._compiled

    def counting(*args: Any) -> Any:
        built.append(1)
        return real(*args)

    slots._compiled = counting  # type: ignore[assignment]
    try:
        results: list[bool] = []

        def work() -> None:
            results.extend(make(i, i, i) == Three(i, i, i) for i in range(slots.WARM_UP))

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        slots._compiled = real  # type: ignore[assignment]
    assert all(results) and len(results) == 8 * slots.WARM_UP
    assert built and make.__code__.co_name == "_built"
    assert all(make(i, i, i) == Three(i, i, i) for i in range(10))


def test_a_maker_takes_every_field_from_its_first_instance_on() -> None:
    # No defaults are applied, before the warm-up as after it: a call site that leaves
    # a field out fails on its first call, not on its 65th.
    from obelisk.core import slots

    make = maker(Three)
    for _ in range(slots.WARM_UP + 3):
        with pytest.raises(TypeError):
            make(1)
        assert make(1, 2, 3) == Three(1, 2, 3)


def test_two_builds_of_one_maker_at_once_both_succeed() -> None:
    # Building is idempotent: a second build that runs while the first is between
    # compiling its function and taking it (two threads at the 64th instance) leaves the
    # first nothing missing. The second build is started from a trace hook, at the end
    # of the first one's exec.
    import sys

    from obelisk.core import slots

    make = maker(Three)
    state = make.__globals__["_state"]
    nested: list[bool] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename.startswith("<obelisk maker for") and not nested:
            if frame.f_code.co_name == "<module>" and event == "return":
                nested.append(True)
                state["built"] = False  # as another thread past the check would see it
                slots._build(state)
            return tracer
        return None

    for i in range(slots.WARM_UP - 1):
        make(i, 2, 3)
    sys.settrace(tracer)
    try:
        made = make(0, 2, 3)  # the 64th: builds
    finally:
        sys.settrace(None)
    assert nested and made == Three(0, 2, 3) and make.__code__.co_name == "_built"
    assert make(7, 8, 9) == Three(7, 8, 9)
