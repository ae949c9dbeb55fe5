"""Look-alikes: kind names spelt with other scripts' letters.

``†ѕtate`` (with a Cyrillic ``ѕ``) is a kind of its own, not ``†state``: a plan can read
or write it unnoticed by a reviewer. A kind whose *skeleton* (compatibility-normalised,
accents removed, look-alike letters of Cyrillic and Greek mapped to Latin) equals that of
another kind in the plan or context, or of a standard kind, gets a ``confusable-kind``
warning. (Tool patterns are checked in :mod:`obelisk.compiler.checks.patterns`.)
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from obelisk.compiler.diagnostics import Diagnostic
from obelisk.compiler.plangraph import PlanGraph
from obelisk.core.messages import NON_DATA_KINDS, PAYLOAD_KEYS

#: The kinds every plan may meet: the protocol's data kinds and message types.
STANDARD_KINDS = frozenset({*PAYLOAD_KEYS, *NON_DATA_KINDS})

# Letters of other scripts drawn like Latin ones (the common homoglyphs of Unicode's
# confusables list for Cyrillic and Greek).
_LOOK_ALIKES = str.maketrans({
    **dict(zip("аеорсухѕіјԁһӏԛԝвкмнт", "aeopcyxsijdhlqwbkmht", strict=True)),
    **dict(zip("АВЕЅІЈКМНОРСТХУ", "ABESIJKMHOPCTXY", strict=True)),
    **dict(zip("αοιρνκτυχ", "aoipvktux", strict=True)),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
    "ı": "i", "ȷ": "j", "ℓ": "l", "ɡ": "g",
})


def skeleton(name: str) -> str:
    """What a name looks like: NFKD, combining marks dropped, look-alikes mapped."""
    decomposed = unicodedata.normalize("NFKD", name)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return plain.translate(_LOOK_ALIKES)


def check_confusable_kinds(graph: PlanGraph) -> Iterator[Diagnostic]:
    """A ``confusable-kind`` warning at each place a plan names a non-ASCII kind that
    looks like another kind (of the plan, the context, or the standard ones)."""
    # Only a non-ASCII kind is reported, so only those uses are kept (and sorted); every
    # kind counts as a look-alike target. Kinds are few: most plans have no non-ASCII one.
    uses: dict[tuple[int, str, str], str | None] = {}  # (call, pointer, kind) -> tool
    kinds: set[str] = set()
    for node in graph.nodes:
        if node.output is not None:
            for target in node.output.targets:
                _note(uses, kinds, node.index, "/_outputPath", target.kind, node.tool)
        for param in node.params:
            for read in param.reads:
                _note(uses, kinds, node.index, param.pointer, read.reference.kind, node.tool)
        for kind in node.scopes:
            _note(uses, kinds, node.index, "/_scopes", kind, node.tool)
    if not uses:
        return
    kinds |= set(graph.context.kinds) | STANDARD_KINDS
    by_skeleton: dict[str, set[str]] = {}
    for kind in kinds:
        by_skeleton.setdefault(skeleton(kind), set()).add(kind)
    for (call, pointer, kind), tool in sorted(uses.items(), key=lambda u: u[0]):
        others = sorted(by_skeleton[skeleton(kind)] - {kind}, key=lambda k: (not k.isascii(), k))
        if others:
            yield Diagnostic(
                "confusable-kind",
                f"kind {ascii(kind)[1:-1]} looks like {ascii(others[0])[1:-1]} but is spelt "
                "with other characters, so it is a different kind",
                call=call, tool=tool, pointer=pointer,
                hint=f"spell it {others[0]} if that is meant, or choose a name that "
                     "cannot be mistaken for it")


def _note(uses: dict[tuple[int, str, str], str | None], kinds: set[str], call: int,
          pointer: str, kind: str, tool: str | None) -> None:
    kinds.add(kind)
    if not kind.isascii():
        uses.setdefault((call, pointer, kind), tool)
