"""core/messages.py: output_message is the inverse of normalise (one builds the data
message of a write, the other gives the write back)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

import obelisk.compiler  # noqa: F401 - plugs the reference parser into core
from obelisk.core import pmaps
from obelisk.core.messages import NON_DATA_KINDS, Write, kind_of, normalise, output_message
from obelisk.core.methods import Method
from obelisk.core.pathtext import render_reference
from obelisk.core.plain import thaw
from obelisk.core.values import freeze

kinds = st.from_regex(r"[a-zA-Z_$][a-zA-Z0-9_$-]{0,6}", fullmatch=True).filter(
    lambda k: k not in NON_DATA_KINDS)
segments = st.one_of(st.integers(0, 20), st.text(min_size=1, max_size=5))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6)


@given(kinds, st.lists(segments, max_size=4), st.sampled_from(list(Method)),
       st.one_of(st.none(), st.sampled_from(["①", "i-2"])), json_values)
def test_normalise_gives_back_the_write_of_an_output_message(
        kind: str, path: list[Any], method: Method, instance: str | None, value: Any) -> None:
    written = freeze(value)
    message = output_message(kind, tuple(path), render_reference(kind, tuple(path)), method,
                             instance, freeze({"_tool": "t"}), written, "2025-01-01T00:00:00Z")
    assert normalise(message) == Write(kind, instance, tuple(path), method, written)
    assert kind_of(message) == kind


def test_kind_of_table() -> None:
    assert kind_of({"type": "data", "kind": "state"}) == "state"
    assert kind_of({"type": "input"}) == "input"
    assert kind_of({"type": "text"}) == "text"
    assert kind_of({"kind": "state"}) is None


@st.composite
def writes(draw: st.DrawFn) -> tuple[str, tuple[Any, ...], Method, str | None, Any, Any, str]:
    """A write and the call and date of its message: kind, path, method, instance,
    frozen value, frozen call, date."""
    path = tuple(draw(st.lists(segments, max_size=4)))
    call = draw(st.dictionaries(st.text(max_size=4), json_values, max_size=4))
    return (draw(kinds), path, draw(st.sampled_from(list(Method))),
            draw(st.one_of(st.none(), st.sampled_from(["①", "i-2"]))),
            freeze(draw(json_values)), freeze({"_tool": "t", **call}), draw(st.text(max_size=30)))


@given(writes())
def test_an_output_message_is_its_fields_in_one_bucket(
        write: tuple[str, tuple[Any, ...], Method, str | None, Any, Any, str]) -> None:
    # The message is built in one bucket, as pmap(fields, pre_size=1) builds it: the same
    # value, hash and behaviour as the message built key by key, and its entries in the
    # order the protocol lists them.
    kind, path, method, instance, written, call, date = write
    text = render_reference(kind, path)
    built = output_message(kind, path, text, method, instance, call, written, date)
    data: Any = written
    for segment in reversed(path):
        data = pmap({str(segment): data})
    fields = {"type": "data", "kind": kind, "_outputPath": text, "_outputMethod": method.value,
              "_call": call, **({} if instance is None else {"_instance": instance}),
              "data": data, "_date": date}
    by_hand = pmap()
    for key, value in fields.items():
        by_hand = by_hand.set(key, value)
    assert built == by_hand == pmap(fields, pre_size=1)
    assert list(built.items()) == list(pmap(fields, pre_size=1).items()) == list(fields.items())
    assert hash(built) == hash(by_hand)
    assert pmaps.bucket_count(built) == 1
    assert thaw(built) == thaw(by_hand)
    assert built.set("x", 1) == by_hand.set("x", 1)
    assert built.remove("_date") == by_hand.remove("_date")
    assert normalise(built) == Write(kind, instance, path, method, written)


def test_messages_share_their_fixed_entries_and_copy_nothing_of_the_call() -> None:
    # What every output message holds alike is held once: the type, kind and method
    # entries are shared tuples, the call and the path text are the caller's own objects.
    call = freeze({"_tool": "t"})
    one, two = (output_message("state", ("a",), "†state.a", Method.SET, None, call, n, "d")
                for n in (1, 2))
    assert one["_call"] is two["_call"] is call
    if pmaps.FAST:  # (the public API makes a map's entries anew)
        entries = [{pair[0]: pair for pair in pmaps.items(m)} for m in (one, two)]
        assert entries[0]["type"] is entries[1]["type"]
        assert entries[0]["_outputMethod"] is entries[1]["_outputMethod"]
        assert entries[0]["kind"] is entries[1]["kind"]
