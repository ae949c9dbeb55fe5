"""What a contender's run of a task measured, and the run's settings."""

from __future__ import annotations

from typing import Any

from attrs import frozen

from .llm import Latency

__all__ = ["CONTENDERS", "Measured", "Settings"]

#: The contenders, in the table's order: (key, what the table calls it).
CONTENDERS = (
    ("whole", "obelisk, whole plan"),
    ("stream", "obelisk, streaming"),
    ("react", "ReAct (obelisk loop)"),
    ("lg-react", "ReAct (LangGraph)"),
    ("lg-parallel", "LangGraph, parallel"),
)


@frozen
class Settings:
    """The simulation's knobs: the model's ``latency``, and ``tool_scale``, which
    multiplies every tool's latency (0 in the tests)."""

    latency: Latency = Latency()
    tool_scale: float = 1.0


@frozen
class Measured:
    """One contender on one task: LLM ``requests``, wall ``seconds``, tokens in and out,
    and the ``answers`` it gave, one per user turn."""

    contender: str
    task: str
    requests: int
    seconds: float
    input_tokens: int
    output_tokens: int
    answers: tuple[Any, ...]
