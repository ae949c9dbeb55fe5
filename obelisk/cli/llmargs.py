"""The adapter ``--llm`` names (:func:`make_llm`, for ``agent``, ``resume`` and
``worker``), ``obelisk agent``'s options for it (``--temperature``, ``--max-answer-tokens``,
``--max-attempts``, ``--timeout``) and for its context (``--context``, ``--input``)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from obelisk.jsonio import InputError, load_json, parse_json

if TYPE_CHECKING:
    from obelisk.llm import LLM

#: The options that set a provider's adapter (a script takes none of them).
ADAPTER_OPTIONS = ("--temperature", "--max-answer-tokens", "--max-attempts", "--timeout")


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    """``--temperature``, ``--max-answer-tokens``, ``--max-attempts`` and ``--timeout``
    (``--max-tokens`` is the run's budget of tokens, every answer's together)."""
    parser.add_argument("--temperature", type=float, metavar="T",
                        help="the sampling temperature (openai: and anthropic:; default: "
                             "the provider's)")
    parser.add_argument("--max-answer-tokens", type=int, metavar="N", dest="answer_tokens",
                        help="the most tokens one answer may take (default: the provider's "
                             "for openai:, 4096 for anthropic:)")
    parser.add_argument("--max-attempts", type=int, metavar="N",
                        help="requests made for one answer before giving up: retries of "
                             "rate limits, 5xx and timeouts (default 4)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", dest="llm_timeout",
                        help="how long one request to the LLM may take (default 60)")


def llm_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments those options give a provider's adapter (checked), its retry
    policy naming them in its give-up hint; an empty dict when none is given and the
    command has none (its hint then names nothing it lacks)."""
    from obelisk import RetryPolicy

    temperature = getattr(args, "temperature", None)
    max_tokens = getattr(args, "answer_tokens", None)
    attempts = getattr(args, "max_attempts", None)
    timeout = getattr(args, "llm_timeout", None)
    if temperature is not None and not 0 <= temperature <= 2:
        raise InputError("--temperature must be between 0 and 2")
    if max_tokens is not None and max_tokens < 1:
        raise InputError("--max-answer-tokens must be at least 1")
    if attempts is not None and attempts < 1:
        raise InputError("--max-attempts must be at least 1")
    if timeout is not None and not timeout > 0:
        raise InputError("--timeout must be a positive number of seconds")
    has_options = hasattr(args, "max_attempts")
    policy = RetryPolicy(max_attempts=attempts or 4, timeout=timeout or 60.0,
                         knobs=("--max-attempts", "--timeout") if has_options else ())
    settings: dict[str, Any] = {"policy": policy}
    if temperature is not None:
        settings["temperature"] = temperature
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens
    return settings


def given_adapter_options(args: argparse.Namespace) -> list[str]:
    """The adapter options given on the command line (a script refuses them)."""
    values = (getattr(args, "temperature", None), getattr(args, "answer_tokens", None),
              getattr(args, "max_attempts", None), getattr(args, "llm_timeout", None))
    return [name for name, value in zip(ADAPTER_OPTIONS, values, strict=True)
            if value is not None]


def add_context_options(parser: argparse.ArgumentParser) -> None:
    """``--context FILE`` and ``--input JSON|@FILE``."""
    parser.add_argument("--context", metavar="CONTEXT.json",
                        help="context messages (an array, or an object with \"context\") "
                             "put before the file's own")
    parser.add_argument("--input", metavar="JSON|@FILE",
                        help='the input: a JSON value, or @FILE for one in a file; added '
                             'after the context as {"type": "input", "input": VALUE}')


def extended_context(messages: list[Any], args: argparse.Namespace) -> list[Any]:
    """``messages`` (the agent file's context) with ``--context``'s messages before them
    and ``--input``'s message after them."""
    from obelisk.cli.common import context_messages

    before = context_messages(args.context) if getattr(args, "context", None) else []
    after = [] if getattr(args, "input", None) is None else [
        {"type": "input", "input": input_value(args.input)}]
    return [*before, *messages, *after]


def input_value(text: str) -> Any:
    """``--input``'s value: JSON text, or the JSON in the file ``@FILE`` names."""
    if text.startswith("@"):
        return load_json(text[1:])
    return parse_json(text, "--input")


def make_llm(spec: str, base_url: str | None, args: argparse.Namespace | None = None) -> LLM:
    """The adapter ``--llm`` names, set by the command's adapter options (``args``; a
    command without them gets the defaults, and a give-up hint naming none); a bad spec,
    script, option or missing SDK is an InputError."""
    from obelisk.llm import AnthropicLLM, LLMError, OpenAILLM, ScriptedLLM

    kind, _, rest = spec.partition(":")
    if not rest:
        raise InputError(f"--llm takes script:FILE, openai:MODEL or anthropic:MODEL, got {spec!r}")
    settings = llm_settings(args if args is not None else argparse.Namespace())
    if kind == "script":
        given = given_adapter_options(args) if args is not None else []
        if given:
            raise InputError(f"{', '.join(given)} {'sets' if len(given) == 1 else 'set'} the "
                             "openai: and anthropic: adapters; a script takes none")
        script = load_json(rest)
        if isinstance(script, list):
            return ScriptedLLM(script)
        if isinstance(script, Mapping) and isinstance(script.get("solutions"), list) and (
                isinstance(script.get("latent", {}), Mapping)) and _delays_ok(script):
            return ScriptedLLM(script["solutions"], latent=dict(script.get("latent", {})),
                               delays=script.get("delays", 0.0))
        raise InputError(f'{rest}: a script is an array of solutions or an object '
                         '{"solutions": [...], "latent": {tool: [answers]}, '
                         '"delays": SECONDS or [SECONDS, ...]}')
    try:
        if kind == "openai":
            return OpenAILLM(rest, base_url=base_url, **settings)
        if kind == "anthropic":
            return AnthropicLLM(rest, base_url=base_url, **settings)
    except LLMError as exc:
        raise InputError(f"--llm {kind}: {exc.detail}") from None
    raise InputError(f"--llm: unknown adapter {kind!r} (script, openai or anthropic)")


def _delays_ok(script: Mapping[str, Any]) -> bool:
    delays = script.get("delays", 0.0)
    values = delays if isinstance(delays, list) else [delays]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
               for v in values)
