"""SARIF 2.1.0 output for ``obelisk validate --format sarif`` (code scanning in CI).

Each diagnostic is a result with its rule (the code), level, message and location: the
plan file, and a logical location naming the call and the JSON Pointer inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from obelisk.compiler.diagnostics import CODES, Diagnostic, Severity, code_of
from obelisk.positions import Where

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: str) -> str:
    # A file name that is not UTF-8 reaches Python with its bytes as surrogates: encode
    # them back to those bytes; any other lone surrogate is written as an escape.
    safe = "/:@!$&'()*+,;=-._~"
    try:
        return quote(path, safe=safe, errors="surrogateescape")
    except UnicodeEncodeError:
        return quote(path, safe=safe, errors="backslashreplace")


def to_sarif(diagnostics: Sequence[Diagnostic], uri: str, version: str,
             wheres: Sequence[Where | None] | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run of obelisk over the plan file at ``uri``.

    ``uri`` is a file path (or a name such as "standard input"); it is written as a URI
    reference, percent-encoded, since SARIF requires one ("my plan.json" is not).
    ``wheres`` (one per diagnostic) give each result's ``region`` in the file.
    """
    return to_sarif_files([(uri, diagnostics, wheres)], version)


def to_sarif_files(files: Sequence[tuple[str, Sequence[Diagnostic],
                                         Sequence[Where | None] | None]],
                   version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run of obelisk over several plan files: one artifact
    per file, every file's results in the one run."""
    codes = list(CODES)
    rules = [
        {"id": code, "shortDescription": {"text": code_of(code).help},
         "defaultConfiguration": {"level": _LEVEL[CODES[code]]}}
        for code in codes
    ]
    results = []
    artifacts = []
    for path, diagnostics, wheres in files:
        uri = _uri(path.replace("\\", "/"))
        artifacts.append({"location": {"uri": uri}})
        for number, d in enumerate(diagnostics):
            where = wheres[number] if wheres is not None else None
            results.append(_result(d, uri, codes, where))
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "obelisk", "version": version,
                                "informationUri": "https://github.com/idealic-ai/docs",
                                "rules": rules}},
            "artifacts": artifacts,
            # Columns count characters (code points), not UTF-16 units: "†" is one.
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def _result(d: Diagnostic, uri: str, codes: list[str], where: Where | None) -> dict[str, Any]:
    text = d.message + (f" (hint: {d.hint})" if d.hint else "")
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    location: dict[str, Any] = {"physicalLocation": physical}
    if d.call is not None:
        if where is not None:  # a plan-wide result has the file as its only location
            physical["region"] = {"startLine": where.line, "startColumn": where.column,
                                  "endColumn": where.end_column}
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
            {"id": i, "logicalLocations": [{"name": f"call {c}",
                                            "fullyQualifiedName": f"/plan/{c}"}]}
            for i, c in enumerate(d.calls)
        ]
    if d.span is not None and d.expression is not None:
        result["properties"] = {"expression": d.expression, "column": d.span.column,
                                "endColumn": d.span.end + 1}
    return result
