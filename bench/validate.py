"""What positions in the file cost ``obelisk validate`` (issue 12's figures).

Prints, measured in one run, for a 10 MB plan file with no problems and for one with
1,000 diagnostics:
  - ``obelisk validate FILE`` as it is (text output: FILE:LINE:COL, the file's line and
    a caret, found by scanning the file's text for the reported pointers only);
  - the same work as before positions existed: read the JSON, compile, print each
    diagnostic with the compiler's ``render_text`` (no positions);
  - their ratio (targets: at most 1.2 with no problems, at most 2 with 1,000 diagnostics),
    and the time the position scan itself takes.

The plan: 2,000 calls in chains, each with a literal "notes" string of about 5 kB (so
the file is 10 MB while compile time stays a few seconds), and tools with JSON Schemas.
The second file makes 1,000 of the calls read a path nothing writes.

Run: python bench/validate.py [--quick]   (--quick: a 2 MB file, 200 diagnostics)
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from obelisk import render_text, summary
from obelisk.cli import main
from obelisk.cli.common import compile_file
from obelisk.jsonio import load_json
from obelisk.planfile import plan_file_of, read_plan_file
from obelisk.positions import Source, diagnostic_pointer, where_all

TOOLS = [{"type": "object", "properties": {"_tool": {"const": "step"}, "x": {},
                                           "notes": {"type": "string"}}, "required": ["x"]}]


def plan(calls: int, dangling: int, pad: int) -> dict[str, Any]:
    notes = "lorem ipsum " * (pad // 12)
    out: list[dict[str, Any]] = []
    for i in range(calls):
        source = "literal" if i % 20 == 0 else f"†state.c{i // 20}.s{i - 1}"
        if i < dangling * 2 and i % 2 == 1:
            source = f"†state.nowhere{i}"  # a dangling reference: one error each
        out.append({"_tool": "step", "x": source, "notes": notes,
                    "_outputPath": f"†state.c{i // 20}.s{i}"})
    return {"tools": TOOLS, "plan": out}


def before(path: str) -> None:
    """What validate did before positions: read, compile, render without positions."""
    pf = plan_file_of(load_json(path), path)
    compiled = compile_file(pf)
    out = io.StringIO()
    for d in compiled.diagnostics:
        print(render_text(d, path), file=out)
    print(f"{path}: {len(compiled.calls)} call(s): {summary(compiled.diagnostics)}", file=out)


def after(path: str) -> None:
    """``obelisk validate FILE`` now."""
    main(["validate", path], out=io.StringIO(), err=io.StringIO())


def best(fn: Callable[[str], None], path: str, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - start)
    return min(times)


def scan_only(path: str) -> float:
    pf = read_plan_file(path)
    compiled = compile_file(pf)
    items = [(diagnostic_pointer(d.call, d.pointer, pf.plan_pointer), None, None)
             for d in compiled.diagnostics]
    start = time.perf_counter()
    assert pf.text is not None
    where_all(Source.of(pf.text), items)
    return time.perf_counter() - start


def main_bench() -> None:
    quick = "--quick" in sys.argv
    calls, pad, dangling = (400, 5000, 200) if quick else (2000, 5000, 1000)
    with tempfile.TemporaryDirectory() as tmp:
        for label, n in (("no problems", 0), (f"{dangling} diagnostics", dangling)):
            path = os.path.join(tmp, "plan.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(plan(calls, n, pad), handle, ensure_ascii=False, indent=1)
            size = os.path.getsize(path) / 1e6
            reported = len(compile_file(read_plan_file(path)).diagnostics)
            t_before, t_after = best(before, path), best(after, path)
            print(f"{size:.1f} MB, {label} ({reported} reported): before positions "
                  f"{t_before:.3f} s, now {t_after:.3f} s, ratio {t_after / t_before:.3f} "
                  f"(position scan alone: {scan_only(path) * 1000:.1f} ms)")


if __name__ == "__main__":
    main_bench()
