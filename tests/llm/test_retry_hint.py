"""The give-up hint names the budget's knobs as the caller spells them (issue 28 item 7:
the command line's hint names only options that exist)."""

from __future__ import annotations

import asyncio

import pytest

from obelisk.llm import LLMError, RetryPolicy
from obelisk.llm.base import Failure
from obelisk.llm.retry import Transient, with_retries


@pytest.mark.parametrize(("policy", "hint"), [
    (RetryPolicy(max_attempts=2), " (raise max_attempts or timeout, or try again later)"),
    (RetryPolicy(max_attempts=2, knobs=("--max-attempts", "--timeout")),
     " (raise --max-attempts or --timeout, or try again later)"),
    (RetryPolicy(max_attempts=2, knobs=()), " (try again later)"),
])
def test_the_give_up_hint_names_the_knobs(policy: RetryPolicy, hint: str) -> None:
    async def busy() -> None:
        raise Transient("busy", failure=Failure.SERVER, status=503)

    async def no_wait(seconds: float) -> None:
        return

    with pytest.raises(LLMError) as caught:
        asyncio.run(with_retries(busy, provider="p", policy=policy, sleep=no_wait))
    assert str(caught.value) == "p (HTTP 503): gave up after 2 attempts: busy" + hint
