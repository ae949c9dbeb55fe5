"""SARIF 2.1.0 output for ``obelisk validate --format sarif`` (code scanning in CI).

Each diagnostic is a result with its rule (the code), level, message and location: the
plan file, and a logical location naming the call and the JSON Pointer inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from obelisk.compiler.diagnostics import CODES, Diagnostic, Severity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_HELP = {
    "syntax": "An expression does not parse, or exceeds the length or nesting limit.",
    "unknown-tool": "_tool is missing, not a string, or not one of the given tools.",
    "param-schema": "A literal parameter violates the tool's schema, or a required one is absent.",
    "invalid-output-method": "_outputMethod is not set, merge, assign, push or concat.",
    "invalid-output-target": "An output path targets a kind that cannot hold data.",
    "dangling-reference": "A read that nothing writes and the context does not provide.",
    "cycle": "Calls that depend on each other in a loop.",
    "unknown-field": "A read names a key the producer's schema does not declare.",
    "type-mismatch": "The known type at a read path cannot meet the parameter's type.",
    "write-race": "Unordered calls, not on exclusive branches, write overlapping paths.",
    "unreachable": "A call requires two alternatives of the same branching output.",
    "scope-race": "What _scopes shows a call depends on the timing of other calls.",
    "external-reference": "An input reference to be supplied at run time.",
    "invalid-call": "A call is not a JSON object.",
    "invalid-meta": "_instance or _scopes has the wrong shape.",
    "no-instances": "Instancing was asked for, but the context names no instance.",
    "too-many": "A kind of diagnostic was cut short.",
}


def _uri(path: str) -> str:
    # A file name that is not UTF-8 reaches Python with its bytes as surrogates: encode
    # them back to those bytes; any other lone surrogate is written as an escape.
    safe = "/:@!$&'()*+,;=-._~"
    try:
        return quote(path, safe=safe, errors="surrogateescape")
    except UnicodeEncodeError:
        return quote(path, safe=safe, errors="backslashreplace")


def to_sarif(diagnostics: Sequence[Diagnostic], uri: str, version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run of obelisk over the plan file at ``uri``.

    ``uri`` is a file path (or a name such as "standard input"); it is written as a URI
    reference, percent-encoded, since SARIF requires one ("my plan.json" is not).
    """
    uri = _uri(uri.replace("\\", "/"))
    codes = list(CODES)
    rules = [
        {"id": code, "shortDescription": {"text": _HELP.get(code, code)},
         "defaultConfiguration": {"level": _LEVEL[CODES[code]]}}
        for code in codes
    ]
    results = []
    for d in diagnostics:
        text = d.message + (f" (hint: {d.hint})" if d.hint else "")
        location: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": uri}}}
        if d.call is not None:
            name = f"call {d.call}" + (f" [{d.instance}]" if d.instance is not None else "")
            location["logicalLocations"] = [{
                "name": name, "kind": "object",
                "fullyQualifiedName": f"/plan/{d.call}{d.pointer}",
            }]
        result: dict[str, Any] = {
            "ruleId": d.code, "ruleIndex": codes.index(d.code), "level": _LEVEL[d.severity],
            "message": {"text": text}, "locations": [location],
        }
        if d.calls:
            result["relatedLocations"] = [
                {"id": i, "logicalLocations": [{"name": f"call {c}", "fullyQualifiedName": f"/plan/{c}"}]}
                for i, c in enumerate(d.calls)
            ]
        if d.span is not None and d.expression is not None:
            result["properties"] = {"expression": d.expression, "column": d.span.column,
                                    "endColumn": d.span.end + 1}
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "obelisk", "version": version,
                                "informationUri": "https://github.com/idealic-ai/docs",
                                "rules": rules}},
            "artifacts": [{"location": {"uri": uri}}],
            "results": results,
        }],
    }
