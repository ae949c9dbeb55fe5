"""bench/peers.py: every engine's workloads give the expected answer (no timing here)."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest
from bench_scripts import BENCH, load_script

peers = load_script("peers", "bench_peers")
SIZES = [3, 10, 57]


@pytest.mark.parametrize("kind", peers.KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_obelisk_and_raw_asyncio_give_the_expected_answer(kind: str, n: int) -> None:
    plan = peers.obelisk_compile(kind, n)
    assert len(plan.nodes) == n
    assert peers.obelisk_sync(plan) == peers.expected(kind, n)
    assert asyncio.run(peers.obelisk_async(plan)) == peers.expected(kind, n)
    assert asyncio.run(peers.raw_asyncio(kind, n)) == peers.expected(kind, n)
    assert asyncio.run(peers.design_floor(kind, n)) == peers.expected(kind, n)


def test_the_workloads_have_the_asked_shape() -> None:
    fan = peers.fan_calls(6)
    assert [c["x"] for c in fan] == [0, *["†state.src"] * 4, "†state.out"]
    chain = peers.chain_calls(4)
    assert [c["x"] for c in chain] == [0, "†state.s0", "†state.s1", "†state.s2"]
    assert chain[-1]["_outputPath"] == "†state.done" == fan[-1]["_outputPath"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", peers.KINDS)
def test_measure_checks_every_engine_answer(kind: str) -> None:
    engines = ["obelisk sync", "obelisk asyncio", "design floor", "raw asyncio"]
    engines += ["langgraph"] if peers.have_langgraph() else []
    with peers.Clock() as clock:
        plan = peers.obelisk_compile(kind, 20)
    plans = {"obelisk sync": plan, "obelisk asyncio": peers.obelisk_compile(kind, 20)}
    for engine in engines:
        compile_clock, run_clock = peers.measure(engine, kind, 20, (clock, plans))
        assert compile_clock.cpu >= 0 and run_clock.wall >= 0


PEERS_PYTHON = BENCH / ".peers-venv" / "bin" / "python"


@pytest.mark.slow
@pytest.mark.parametrize("kind", peers.KINDS)
def test_langgraph_gives_the_expected_answer(kind: str) -> None:
    if peers.have_langgraph():
        graph = peers.langgraph_build(kind, 12)
        assert asyncio.run(peers.langgraph_run(graph, kind, 12)) == peers.expected(kind, 12)
        return
    if PEERS_PYTHON.exists():  # LangGraph lives in the benchmarks' own environment
        code = ("import asyncio, sys\n"
                "sys.path.insert(0, sys.argv[1])\n"
                "import peers\n"
                "kind = sys.argv[2]\n"
                "graph = peers.langgraph_build(kind, 12)\n"
                "got = asyncio.run(peers.langgraph_run(graph, kind, 12))\n"
                "print('right' if got == peers.expected(kind, 12) else f'wrong: {got!r}')\n")
        done = subprocess.run([str(PEERS_PYTHON), "-c", code, str(BENCH), kind],
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.strip() == "right", done.stdout
        return
    if os.environ.get("OBELISK_REQUIRE_LANGGRAPH"):
        pytest.fail("OBELISK_REQUIRE_LANGGRAPH is set, but LangGraph is neither importable "
                    f"nor in {PEERS_PYTHON.parent.parent} (.ci/run makes it)")
    pytest.skip("LangGraph is not installed here (bench/peers.py installs it in its own "
                "environment, bench/.peers-venv)")


def test_the_instruction_counts_child_runs_both_engines_and_checks_their_answers() -> None:
    # bench/instructions.py counts what this child does under callgrind; here it runs
    # natively (small plans), answers checked by the asserts inside.
    instructions = load_script("instructions")
    for engine in instructions.ENGINES:
        for kind in peers.KINDS:
            instructions.child(engine, kind, 12, measured=True)
    # The compile row's child: bench/compile.py's plan, which compiles without errors.
    instructions.child("obelisk compile", "plan", 200, measured=True)


@pytest.mark.slow
def test_the_opcode_table_counts_the_run_by_function() -> None:
    # bench/opcodes.py: exact counts, the same on every run but for two functions whose
    # path depends on the process's clock or history: the clock (a new text when the
    # millisecond changes) and gc_keep (it freezes every thousand calls, counted across
    # runs); spread over the machine's functions (the table is what a cut is aimed with).
    opcodes = load_script("opcodes")
    first_ops, first_calls = opcodes.count("chain", 30)
    again_ops, again_calls = opcodes.count("chain", 30)
    for stateful in ("common.py:utc_now", "collector.py:gc_keep"):
        assert first_calls[stateful] == again_calls[stateful] == 30
        del first_ops[stateful], again_ops[stateful]
    differ = {k for k in first_ops.keys() | again_ops.keys() if first_ops[k] != again_ops[k]}
    assert not differ, sorted((k, first_ops[k], again_ops[k]) for k in differ)
    assert first_calls == again_calls
    assert first_calls["machine.py:settle"] == 30  # one transition a completed call
    assert first_ops["machine.py:_evaluate"] > 0 and first_ops["aio.py:_settle"] > 0
