"""compiler/export.py: graphs that show problems. Dangling reads and cycle edges are
marked, ``||`` alternatives and ``&&`` targets look different, reads of one kind from
outside the plan share a node, and both DOT and Mermaid carry a legend."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from obelisk import compile_plan

CYCLE_AND_DANGLING = [
    {"_tool": "a", "p": "†state.y", "_outputPath": "†state.x"},
    {"_tool": "b", "p": "†state.x", "_outputPath": "†state.y"},
    {"_tool": "c", "p": "†state.nowhere"},
]
FAN_OUT = [
    {"_tool": "w", "p": "†input.q", "_outputPath": "†state.a && †state.b"},
    {"_tool": "r", "p": "†state.a", "q": "†input.r"},
    {"_tool": "s", "p": "†state.b"},
    {"_tool": "t", "_outputPath": "†state.ok || †state.err"},
    {"_tool": "u", "p": "†state.ok"},
]


def test_mermaid_marks_the_cycle_and_the_dangling_read() -> None:
    text = compile_plan(CYCLE_AND_DANGLING).to_mermaid()
    assert '  d0(["†state.nowhere: nothing writes it"]):::dangling' in text
    assert "  d0 --o n2" in text
    assert '  n0 -->|"cycle: †state.x"| n1' in text
    assert '  n1 -->|"cycle: †state.y"| n0' in text
    # Links are numbered in order: d0 --o n2 is 0, the two cycle edges 1 and 2, and the
    # legend's cycle link 3 (its first: the plan has no other kind of edge to explain).
    assert text.splitlines()[-1] == "  linkStyle 0,1,2,3 stroke:#d00,stroke-width:2px"


def test_dot_marks_the_cycle_and_the_dangling_read() -> None:
    text = compile_plan(CYCLE_AND_DANGLING).to_dot()
    assert ('  d0 [label="†state.nowhere: nothing writes it", shape=ellipse, style=dashed, '
            'color="#dd0000"') in text
    assert ('  n0 -> n1 [label="cycle: †state.x", color="#dd0000", fontcolor="#dd0000", '
            "penwidth=2];") in text


def test_alternatives_and_fan_out_look_different_and_inputs_share_a_node() -> None:
    plan = compile_plan(FAN_OUT)
    mermaid, dot = plan.to_mermaid(), plan.to_dot()
    assert '  n0 ==>|"&& †state.a"| n1' in mermaid
    assert '  n3 -.->|"alt 1: †state.ok"| n4' in mermaid
    assert '  n0 -> n1 [label="&& †state.a", style=bold];' in dot
    assert '  n3 -> n4 [label="alt 1: †state.ok", style=dashed];' in dot
    # Both †input reads come from one node.
    assert mermaid.count('(["†input"])') == 1
    assert '  k0 --o|"†input.q"| n0' in mermaid and '  k0 --o|"†input.r"| n1' in mermaid
    assert dot.count('[label="†input", shape=ellipse') == 1


@pytest.mark.parametrize("plan", [CYCLE_AND_DANGLING, FAN_OUT])
def test_both_drawings_carry_a_legend(plan: list[dict[str, str]]) -> None:
    compiled = compile_plan(plan)
    assert "  subgraph legend [legend]" in compiled.to_mermaid()
    assert "  subgraph cluster_legend {" in compiled.to_dot()


@pytest.mark.parametrize("plan", [CYCLE_AND_DANGLING, FAN_OUT])
def test_dot_renders(plan: list[dict[str, str]]) -> None:
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("Graphviz's dot is not installed")
    result = subprocess.run([dot, "-Tsvg"], input=compile_plan(plan).to_dot().encode(),
                            capture_output=True, timeout=60)
    assert result.returncode == 0 and result.stderr == b"", result.stderr.decode()


#: The legend's entries, by what they explain: (Mermaid text, DOT text).
ENTRIES = {
    "plain": ("a path one call writes and the other reads",) * 2,
    "alternative": ("alt k: one alternative of ||, exclusive",) * 2,
    "fan-out": ("&& one of the paths written together",) * 2,
    "cycle": ("cycle: part of a loop",) * 2,
    "source": ("†kind: read from the context or inputs",) * 2,
    "dangling": ("†kind.path: nothing writes it",) * 2,
}


@pytest.mark.parametrize(("plan", "shown"), [
    (CYCLE_AND_DANGLING, {"cycle", "dangling"}),
    (FAN_OUT, {"fan-out", "alternative", "source"}),
    ([{"_tool": "a", "_outputPath": "†state.x"}, {"_tool": "b", "p": "†state.x"}], {"plain"}),
    ([{"_tool": "a", "p": "†input.q"}], {"source"}),
])
def test_the_legend_lists_only_what_the_plan_uses(plan: list[dict[str, str]],
                                                  shown: set[str]) -> None:
    compiled = compile_plan(plan)
    mermaid, dot = compiled.to_mermaid(), compiled.to_dot()
    for entry, (in_mermaid, in_dot) in ENTRIES.items():
        assert (in_mermaid in mermaid) == (entry in shown), (entry, mermaid)
        assert (in_dot in dot) == (entry in shown), (entry, dot)


def test_a_plan_with_nothing_to_explain_has_no_legend() -> None:
    compiled = compile_plan([{"_tool": "a"}])
    assert "legend" not in compiled.to_mermaid() and "legend" not in compiled.to_dot()
    assert "linkStyle" not in compiled.to_mermaid()


@pytest.mark.parametrize("plan", [CYCLE_AND_DANGLING, FAN_OUT])
def test_no_legend(plan: list[dict[str, str]]) -> None:
    compiled = compile_plan(plan)
    mermaid, dot = compiled.to_mermaid(legend=False), compiled.to_dot(legend=False)
    assert "legend" not in mermaid and "legend" not in dot
    assert "L0" not in mermaid + dot
    # The rest is the same drawing.
    assert mermaid.splitlines()[:5] == compiled.to_mermaid().splitlines()[:5]
    assert dot.rstrip("}\n") in compiled.to_dot()
