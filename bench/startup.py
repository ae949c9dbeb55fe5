"""Start-up cost of the command line (issue 13), measured in one run.

Runs, alternating, each command ``--runs`` times (15 by default) as a fresh process and
prints the median wall time and CPU time of each, and its ratio to ``python -c pass``
(on a busy machine the CPU times are the steadier figure):
  - ``python -c pass``;
  - ``obelisk --help``                                    (target <= 4 x python -c pass);
  - ``obelisk validate`` of a 20-call plan file, no tools (target <= 10 x);
  - ``obelisk resolve`` of one expression in examples/context.json.
Then, from ``python -X importtime`` (median of 5 runs each), what each command imports:
the heavy modules it loads or leaves alone, the top offenders by their own import time,
and, for ``validate``, the share of the expression grammar (the lark import, the body of
obelisk.compiler.parse, which builds the parser there, and a first parse over a second).

``--baseline PATH`` runs the same against another checkout (``PYTHONPATH=PATH``,
``python -m obelisk.cli``), to compare with an older commit; give it ``--python`` from an
environment with obelisk's dependencies and without obelisk (an editable install of this
checkout would be found first). Run this checkout the same way for a like-for-like pair.

Run: python bench/startup.py [--runs 15] [--baseline PATH --python PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

REPO = pathlib.Path(__file__).resolve().parent.parent
PYTHON = [sys.executable]  # the interpreter measured; --python changes it
HEAVY = ("rich", "jsonschema", "sqlite3", "asyncio", "lark", "hypothesis", "httpx",
         "argcomplete", "obelisk.compiler", "obelisk.interpreters", "obelisk.llm",
         "obelisk.agent", "obelisk.journal", "obelisk.kit")
TARGETS = {"obelisk --help": 4.0, "obelisk validate (20 calls, no tools)": 10.0}


def twenty_calls(folder: pathlib.Path) -> pathlib.Path:
    """A plan file of 20 calls, with a context and no tools, written in ``folder``."""
    calls = [{"_tool": "fetchUser", "id": "†input.userId", "_outputPath": "†state.s0"}]
    calls += [{"_tool": f"step{i % 4}", "previous": f"†state.s{i - 1}",
               "user": "†state.user.name", "_outputPath": f"†state.s{i}"} for i in range(1, 20)]
    data = {"description": "twenty calls, no tools (bench/startup.py)",
            "context": [{"type": "input", "input": {"userId": "u-1"}},
                        {"type": "state", "user": {"name": "Alex"}}],
            "plan": calls}
    path = folder / "twenty-calls.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def obelisk_arguments(plan: pathlib.Path) -> dict[str, list[str]]:
    """The arguments of each measured obelisk command."""
    return {
        "obelisk --help": ["--help"],
        "obelisk validate (20 calls, no tools)": ["validate", str(plan)],
        "obelisk resolve": ["resolve", str(REPO / "examples" / "context.json"), "†state.user.name"],
    }


def commands(plan: pathlib.Path, baseline: str | None) -> dict[str, list[str]]:
    """Each measured command line: the console script, or ``python -m obelisk.cli``."""
    script = pathlib.Path(PYTHON[0]).parent / "obelisk"
    obelisk = [str(script)] if script.exists() and not baseline else [PYTHON[0], "-m", "obelisk.cli"]
    cases = {"python -c pass": [PYTHON[0], "-c", "pass"]}
    cases.update({name: [*obelisk, *rest] for name, rest in obelisk_arguments(plan).items()})
    return cases


def run_once(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``argv``, which must
    exit 0. CPU time is what the process itself cost: other load on the machine changes
    it far less than the wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def import_times(arguments: Sequence[str], env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Each module's own and cumulative import time in ms (``-X importtime``) in
    ``python -m obelisk.cli ARGUMENTS``."""
    done = subprocess.run([PYTHON[0], "-X", "importtime", "-m", "obelisk.cli", *arguments],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    times: dict[str, tuple[float, float]] = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, cumulative, name = line[len("import time:"):].split("|")
            times[name.strip()] = (int(own) / 1000, int(cumulative) / 1000)
    return times


def modules_loaded(arguments: Sequence[str], env: dict[str, str]) -> set[str]:
    """The modules a fresh interpreter holds after running ``obelisk ARGUMENTS``."""
    code = ("import io, json, sys\n"
            "from obelisk.cli import main\n"
            f"main({list(arguments)!r}, out=io.StringIO(), err=io.StringIO())\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([PYTHON[0], "-c", code], env=env, capture_output=True, text=True,
                          check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def grammar_probe(env: dict[str, str]) -> dict[str, float]:
    """The grammar's part, in ms: lark's import, obelisk.compiler's import, the first
    ``parse_input`` less a second one (a parser built lazily is built in the first)."""
    code = (
        "import time, json\n"
        "t0 = time.perf_counter(); import lark\n"
        "t1 = time.perf_counter(); import obelisk.compiler.parse as p\n"
        "t2 = time.perf_counter(); p.parse_input('†state.a.b || †input.c')\n"
        "t3 = time.perf_counter(); p.parse_input('†state.d.e || †input.f')\n"
        "t4 = time.perf_counter()\n"
        "print(json.dumps({'lark import': (t1 - t0) * 1e3, 'obelisk.compiler import': "
        "(t2 - t1) * 1e3, 'first parse less second': ((t3 - t2) - (t4 - t3)) * 1e3}))\n"
    )
    out = subprocess.run([PYTHON[0], "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    """Measure, alternating, and print the medians, the ratios and the imports."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (median)")
    parser.add_argument("--baseline", metavar="PATH", help="measure the checkout at PATH")
    parser.add_argument("--python", metavar="PYTHON",
                        help="the interpreter to measure (default: this one); with --baseline, "
                             "one whose environment has obelisk's dependencies but not obelisk "
                             "itself, since an editable install would take precedence")
    args = parser.parse_args()
    if args.python:
        PYTHON[0] = args.python
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # Measure what users see: modules loaded from cached bytecode, which the warm-up run
    # writes. Without it every run would compile every module it imports.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.baseline:
        env["PYTHONPATH"] = str(pathlib.Path(args.baseline).resolve())
    with tempfile.TemporaryDirectory() as folder:
        # Run from an empty folder: a checkout in the current directory would be imported
        # first (sys.path[0] is '' for python -c), whatever PYTHONPATH says.
        os.chdir(folder)
        plan = twenty_calls(pathlib.Path(folder))
        cases = commands(plan, args.baseline)
        where = subprocess.run([PYTHON[0], "-c", "import obelisk; print(obelisk.__file__)"],
                               env=env, capture_output=True, text=True, check=True).stdout.strip()
        print(f"Python {sys.version.split()[0]}, obelisk from {pathlib.Path(where).parent}")
        for argv in cases.values():  # warm the disk cache and the .pyc files first
            run_once(argv, env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        names = list(cases)
        for r in range(args.runs):
            for name in names[r % len(names):] + names[:r % len(names)]:
                times[name].append(run_once(cases[name], env))
        for part, label in ((0, "Wall time"), (1, "CPU time (user + system)")):
            base = statistics.median(t[part] for t in times["python -c pass"])
            print(f"\n{label}, median of {args.runs} runs, alternating:")
            for name, values in times.items():
                median = statistics.median(t[part] for t in values)
                ratio = median / base
                target = TARGETS.get(name)
                mark = f" (target <= {target:g}: {'met' if ratio <= target else 'NOT MET'})" if target else ""
                print(f"  {name:<40} {median * 1000:7.1f} ms  {ratio:5.2f} x python -c pass{mark}")

        print("\nImports (python -X importtime, median of 5 runs):")
        for name, arguments in obelisk_arguments(plan).items():
            runs = [import_times(arguments, env) for _ in range(5)]
            modules = set.intersection(*(set(r) for r in runs))
            own = {m: statistics.median(r[m][0] for r in runs) for m in modules}
            total = {m: statistics.median(r[m][1] for r in runs) for m in modules}
            held = modules_loaded(arguments, env)  # -X importtime leaves some packages out
            loaded = [h for h in HEAVY if h in held]
            absent = [h for h in HEAVY if h not in held]
            top = sorted(own, key=own.__getitem__, reverse=True)[:8]
            print(f"  {name}: {len(held)} modules")
            print(f"    heavy modules loaded: {', '.join(loaded) or 'none'}")
            print(f"    not loaded: {', '.join(absent) or 'none'}")
            print("    top offenders (own ms / with what they import):  "
                  + ", ".join(f"{m} {own[m]:.1f}/{total[m]:.1f}" for m in top))
            if "validate" in name:
                parse = "obelisk.compiler.parse"
                if parse in own:
                    print(f"    obelisk.compiler.parse's own body (the grammar built there): "
                          f"{own[parse]:.1f} ms; lark imported: {total.get('lark', 0.0):.1f} ms")

        probes = [grammar_probe(env) for _ in range(5)]
        print("\nThe expression grammar, in a fresh process (median of 5, ms):  "
              + ", ".join(f"{k} {statistics.median(p[k] for p in probes):.1f}" for k in probes[0]))
        validate = statistics.median(t[0] for t in times["obelisk validate (20 calls, no tools)"])
        print(f"  obelisk validate of 20 calls took {validate * 1000:.1f} ms in all")
        os.chdir(REPO)


if __name__ == "__main__":
    main()
