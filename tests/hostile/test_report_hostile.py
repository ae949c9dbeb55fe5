"""``obelisk report`` of files it did not write: an events file or a ``--json`` report
whose events have fields of the wrong type (a hand-edited file, another program's, a
truncated or corrupted one) is bad input, exit 2, naming the line and the field (a JSON
Pointer). Before: the page was drawn from whatever was there and failed halfway with
``internal error (a bug, please report it): TypeError: unsupported operand type(s) for
+=: 'int' and 'str'`` (exit 1), or ``int() argument must be ... not 'dict'``.

The property: any list of objects that name a kind of event, with any JSON values in
the fields events have, is either drawn or refused as bad input; never a crash.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from clirun import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import obelisk
from obelisk.jsonio import InputError
from obelisk.runreport import load_events, render_page

KINDS = sorted(obelisk.event_schema()["$defs"])
FIELDS = sorted({field for kind in obelisk.event_schema()["$defs"].values()
                 for field in kind.get("properties", {})} - {"type"})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**12) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=6)
events = st.lists(st.builds(lambda kind, fields: {"type": kind, **fields},
                            st.sampled_from(KINDS),
                            st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6)),
                  min_size=1, max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events)
def test_any_events_file_is_drawn_or_refused_as_bad_input(found: list[dict[str, Any]]) -> None:
    drawn_or_refused("e.jsonl", "".join(json.dumps(e) + "\n" for e in found))


def drawn_or_refused(name: str, text: str) -> None:
    """A file ``name`` holding ``text``: ``obelisk report`` draws it, or refuses it as bad
    input naming the file; anything else fails the test."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / name
        path.write_text(text, encoding="utf-8")
        try:
            loaded = load_events(str(path))
        except InputError as exc:
            assert str(path) in str(exc)
            return
        assert "<html" in render_page(loaded, "hostile")


OUTCOME_FIELDS = ["call", "instance", "outcome", "tool", "error", "reason", "alternative"]
outcomes = st.lists(st.dictionaries(st.sampled_from(OUTCOME_FIELDS), json_values, max_size=5)
                    | json_values, max_size=4)
reports = st.one_of(
    st.fixed_dictionaries({"calls": outcomes}, optional={"status": json_values}),
    st.fixed_dictionaries({"ticks": st.lists(st.fixed_dictionaries({}, optional={
        "tick": st.integers(-1, 3) | json_values, "usage": json_values | st.fixed_dictionaries(
            {}, optional={"input_tokens": json_values, "output_tokens": json_values}),
        "solution": json_values | st.fixed_dictionaries({"calls": outcomes}),
        "outcomes": outcomes}), max_size=3)}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reports)
def test_any_json_report_is_drawn_or_refused_as_bad_input(report: dict[str, Any]) -> None:
    drawn_or_refused("r.json", json.dumps(report))


@pytest.mark.parametrize(("lines", "said"), [
    ([{"type": "llm_request", "tick": 1, "size": "big"}], ":1: llm_request event, at /size: "
     "'big' is not of type 'integer'"),
    ([{"type": "run_started", "kind": "agent"},
      {"type": "llm_answer", "tick": 1, "input_tokens": "lots"}],
     ":2: llm_answer event, at /input_tokens: 'lots' is not of type 'integer'"),
    ([{"type": "call_finished", "call": "x", "node": 0}],
     ":1: call_finished event, at /call: 'x' is not of type 'integer'"),
])
def test_an_events_file_with_a_field_of_the_wrong_type_says_where(
        tmp_path: pathlib.Path, lines: list[dict[str, Any]], said: str) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    code, _, err = cli("report", str(path), "-o", str(tmp_path / "r.html"))
    assert code == 2 and str(path) + said in err, err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(("report", "said"), [
    ({"calls": [{"call": "x", "outcome": "executed"}]},
     "plan event, at /nodes/0/call: 'x' is not of type 'integer'"),
    ({"ticks": [{"tick": 1, "usage": {"input_tokens": "a"}, "outcomes": []}]},
     "tick 1: llm_answer event, at /input_tokens: 'a' is not of type 'integer'"),
    ({"ticks": [{"tick": 1, "outcomes": [{"call": 0, "outcome": ["x"]}]}]},
     "tick 1: call 0: call_finished event, at /outcome: ['x'] is not one of"),
])
def test_a_json_report_with_a_field_of_the_wrong_type_says_where(
        tmp_path: pathlib.Path, report: dict[str, Any], said: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    code, _, err = cli("report", str(path), "-o", str(tmp_path / "r.html"))
    assert code == 2 and f"{path}: not a --json report obelisk wrote: {said}" in err, err
