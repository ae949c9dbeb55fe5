"""``obelisk agent --delegate-root DIR`` and ``--stream``: the producer and streaming
examples offline with a script, and what bad input prints."""

from __future__ import annotations

import io
import json
import pathlib

from obelisk.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "agent"


def agent(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["agent", *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def example(name: str, *extra: str) -> tuple[int, str, str]:
    return agent(str(EXAMPLES / f"{name}.json"),
                 "--llm", f"script:{EXAMPLES / name}.solutions.json", *extra)


def test_the_producer_delegates_to_the_saved_composer_request() -> None:
    code, out, err = example("producer", "--delegate-root", str(EXAMPLES / "requests"))
    assert code == 0, err
    assert "delegate caller -> composer.json: completed after 1 tick(s)" in out
    code, out, _ = example("producer", "--delegate-root", str(EXAMPLES / "requests"), "--json")
    assert json.loads(out)["output"]["url"] == "https://poems.example/sea"


def test_a_missing_saved_request_is_reported_before_the_run(tmp_path: pathlib.Path) -> None:
    code, out, err = example("producer", "--delegate-root", str(tmp_path))
    assert code == 2 and out == ""
    assert "composer.json" in err and "tick" not in err and "Traceback" not in err
    code, _, err = example("producer")
    assert code == 2 and "--delegate-root" in err
    code, _, err = example("producer", "--delegate-root", str(tmp_path / "nowhere"))
    assert code == 2 and "not a folder" in err


def test_streaming_shows_calls_starting_while_the_solution_arrives() -> None:
    code, out, err = example("stream", "--stream")
    assert code == 0, err
    assert "call 0 started (1 call(s) arrived, the solution still arriving)" in out
    assert out.index("call 0 started") < out.index("call 0 fetchPage: executed")
    assert "output: 360" in out


def test_the_stream_example_gives_the_same_output_without_streaming() -> None:
    code, out, _ = example("stream", "--json")
    assert code == 0 and json.loads(out)["output"] == 360


def test_bad_delays_in_a_script_are_bad_input(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"solutions": [], "delays": "slow"}))
    code, _, err = agent(str(EXAMPLES / "stream.json"), "--llm", f"script:{script}")
    assert code == 2 and "delays" in err
