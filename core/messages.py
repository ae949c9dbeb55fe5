"""Messages: the canonical data form (docs/semantics.md §1) and the write each one makes (§2).

Types ``data``, ``input`` and ``state`` carry data; every other type is carried through
untouched and can never be read or written. :func:`normalise` checks a data message and
returns the :class:`Write` it stands for; ambiguous or malformed messages raise
:class:`MessageError` naming the field and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from attrs import frozen
from pyrsistent import PMap, pmap

from obelisk.core.ast import Reference
from obelisk.core.errors import ExpressionSyntaxError, MessageError, NotJSONError
from obelisk.core.methods import Method
from obelisk.core.paths import Path
from obelisk.core.pathtext import render_reference
from obelisk.core.pmaps import compact, single
from obelisk.core.values import Frozen, freeze

#: Message types that carry data, with the key holding their payload.
PAYLOAD_KEYS: Mapping[str, str] = {"data": "data", "input": "input", "state": "state"}

#: Keys that are never part of an inline payload.
RESERVED_KEYS = frozenset({"type", "kind", "schema", "description"})

#: What a kind looks like: the grammar's KIND terminal (a kind must be nameable as †kind).
KIND_NAME = re.compile(r"(?:[^\W\d][\w$-]*|\$[\w$-]*)\Z")

#: Kinds that cannot hold data: the protocol's non-data message types.
NON_DATA_KINDS = frozenset({"text", "system", "tool", "plan", "error", "meta", "output", "call"})


@frozen
class Write:
    """One write operation ``(kind, instance, path, method, value)`` made by a data message."""

    kind: str
    instance: str | None
    path: Path
    method: Method
    value: Frozen


class ReferenceParser(Protocol):
    """Parses exactly one concrete reference (``†kind.a.b``); raises
    :class:`ExpressionSyntaxError` for anything else."""

    def __call__(self, text: str) -> Reference: ...


class _Parsers:
    """Where the reference parser is plugged in.

    The grammar lives in the compiler, a layer above core: core must not import it, so the
    compiler's parser is injected here when the compiler is imported (see
    :func:`use_reference_parser`). Only messages with an ``_outputPath`` need it.
    """

    reference: ReferenceParser | None = None


def use_reference_parser(parser: ReferenceParser) -> None:
    """Plug in the parser :func:`normalise` uses for a message's ``_outputPath``."""
    _Parsers.reference = parser


def kind_of(message: Mapping[str, Any]) -> str | None:
    """The kind a message is filed under: a data message's ``kind`` (default its type),
    any other message's ``type``; None when the type is not a string.

    This reads without checking (see :func:`normalise` for the checks).
    """
    mtype = message.get("type")
    if not isinstance(mtype, str):
        return None
    if mtype in PAYLOAD_KEYS:
        kind = message.get("kind", mtype)
        return kind if isinstance(kind, str) else None
    return mtype


def output_message(
    kind: str, path: Path, path_text: str, method: Method, instance: str | None,
    call: Frozen, value: Frozen, date: str,
) -> PMap[str, Any]:
    """The data message that writes ``value`` at ``†kind.path`` (the inverse of
    :func:`normalise`, which gives back that write), built frozen, whole, in one step.

    ``value`` is nested along ``path`` in ``data``, an index as its decimal text. The
    message is ``pmap(fields, pre_size=1)``: a PMap files each entry in the bucket its
    key's hash picks among as many buckets as the map has (by default twice its size),
    and every non-empty bucket is a list of its own, so an output message spread over the
    default buckets holds about six lists; this one holds one. Lookups scan that bucket
    (eight entries at most); equality and hash do not depend on the buckets, and a later
    ``set`` spreads the map out again as pmap does. The ``type``, ``kind`` and
    ``_outputMethod`` entries are tuples shared by every message.
    """
    data: Any = value
    for segment in reversed(path):
        data = single(str(segment), data)
    if instance is None:
        return compact([_TYPE_PAIR, _kind_pair(kind), ("_outputPath", path_text),
                        _METHOD_PAIRS[method], ("_call", call), ("data", data), ("_date", date)])
    return compact([_TYPE_PAIR, _kind_pair(kind), ("_outputPath", path_text),
                    _METHOD_PAIRS[method], ("_call", call), ("_instance", instance),
                    ("data", data), ("_date", date)])


#: The ``_outputMethod`` entry of every method, one tuple each, shared by every message:
#: a PMap's bucket holds its entries as ``(key, value)`` tuples, and a tuple is immutable.
_METHOD_PAIRS: dict[Method, tuple[str, str]] = {m: ("_outputMethod", m.value) for m in Method}

#: The ``type`` entry of every output message.
_TYPE_PAIR = ("type", "data")

#: The ``kind`` entries made so far, one tuple per kind, shared by its messages (a plan
#: writes a handful of kinds; past the bound, new kinds get a tuple each).
_KIND_PAIRS: dict[str, tuple[str, str]] = {}
_KIND_PAIRS_MAX = 1024


def _kind_pair(kind: str) -> tuple[str, str]:
    pair = _KIND_PAIRS.get(kind)
    if pair is None:
        pair = ("kind", kind)
        if len(_KIND_PAIRS) < _KIND_PAIRS_MAX:
            _KIND_PAIRS[kind] = pair
    return pair


def is_reserved(key: str) -> bool:
    """True for keys that are metadata, never inline payload: ``type``, ``kind``, ``_*``..."""
    return key in RESERVED_KEYS or key.startswith("_")


def normalise(message: Any, *, checked: bool = False) -> Write | None:
    """The write a message makes, or None when its type carries no data.

    ``checked=True`` says that ``message`` is what :func:`freeze` returned, so its payload
    is not checked a second time (a context freezes each message once).

    Raises :class:`MessageError` for a message that is not an object, has no string
    ``type``, mixes a payload key with inline fields, names a bad kind, method, instance or
    output path, holds non-JSON, or whose ``data`` does not hold its ``_outputPath``.
    """
    if not isinstance(message, Mapping):
        raise MessageError(f"a message must be a JSON object, got {type(message).__name__}")
    mtype = message.get("type")
    if not isinstance(mtype, str):
        raise MessageError(
            'every message needs a string "type" ("data", "input", "state", "text", ...)',
            pointer="/type",
        )
    if mtype not in PAYLOAD_KEYS:
        return None
    kind = _kind_of(message, mtype)
    payload_key = PAYLOAD_KEYS[mtype]
    inline = [k for k in message if not is_reserved(k) and k != payload_key]
    if payload_key in message:
        if inline:
            raise MessageError(
                f'has both "{payload_key}" and inline fields {sorted(inline)}: put the fields '
                f'inside "{payload_key}", or drop "{payload_key}"',
                pointer="/" + payload_key,
            )
        payload = message[payload_key]
    else:
        payload = {k: message[k] for k in inline}
    try:
        data = (pmap(payload) if isinstance(payload, dict) else payload) if checked else (
            freeze(payload, "/" + payload_key if payload_key in message else ""))
    except NotJSONError as exc:
        raise MessageError(exc.reason, pointer=exc.pointer) from None
    instance = message.get("_instance")
    if instance is not None and not isinstance(instance, str):
        raise MessageError("_instance must be a string id", pointer="/_instance")
    out = message.get("_outputPath")
    path: Path = ()
    if out is not None:
        path = _output_path_of(out, kind)
    default = Method.SET if out is not None else Method.MERGE
    method = _method_of(message.get("_outputMethod"), default)
    value = _held_at(data, path, out or "", "/" + payload_key if payload_key in message else "")
    return Write(kind=kind, instance=instance, path=path, method=method, value=value)


def _kind_of(message: Mapping[str, Any], mtype: str) -> str:
    kind = message.get("kind", mtype)
    if not isinstance(kind, str) or not kind:
        raise MessageError('"kind" must be a non-empty string', pointer="/kind")
    if mtype != "data" and kind != mtype:
        raise MessageError(
            f'a "{mtype}" message has kind "{mtype}"; to write kind "{kind}" use '
            f'{{"type": "data", "kind": "{kind}", ...}}',
            pointer="/kind",
        )
    if not KIND_NAME.match(kind):
        raise MessageError(
            f'kind "{kind}" cannot be named in a reference (†kind.path); a kind starts with '
            "a letter, _ or $ and holds word characters, $ and -",
            pointer="/kind",
        )
    if kind in NON_DATA_KINDS:
        raise MessageError(
            f'kind "{kind}" is a message type that cannot hold data; choose another kind',
            pointer="/kind",
        )
    return kind


def _method_of(raw: Any, default: Method) -> Method:
    if raw is None:
        return default
    try:
        return Method(raw)
    except ValueError:
        raise MessageError(
            f"_outputMethod {raw!r} is not one of set, merge, assign, push, concat",
            pointer="/_outputMethod",
        ) from None


def _output_path_of(raw: Any, kind: str) -> Path:
    if not isinstance(raw, str):
        raise MessageError("_outputPath must be a reference string", pointer="/_outputPath")
    parse_reference = _Parsers.reference
    if parse_reference is None:  # pragma: no cover - the compiler plugs it in on import
        raise MessageError(
            "_outputPath cannot be read: no reference parser is plugged in (import "
            "obelisk.compiler, or call obelisk.core.messages.use_reference_parser)",
            pointer="/_outputPath",
        )
    try:
        ref = parse_reference(raw)
    except ExpressionSyntaxError as exc:
        raise MessageError(
            "_outputPath on a message must be one concrete reference such as "
            f'"†{kind}.user.status":\n{exc.render()}',
            pointer="/_outputPath",
        ) from None
    if ref.kind != kind:
        raise MessageError(
            f'_outputPath {raw!r} writes kind "{ref.kind}" but the message is kind "{kind}"',
            pointer="/_outputPath",
        )
    return ref.path


def _held_at(data: Frozen, path: Path, raw_path: str, pointer: str) -> Frozen:
    # A message with an _outputPath holds the written value nested along that path, each
    # segment an object key (an index as its decimal text).
    node = data
    for depth, segment in enumerate(path):
        key = segment if isinstance(segment, str) else str(segment)
        if not isinstance(node, PMap) or key not in node:
            where = render_reference("…", path[:depth]).removeprefix("†…").lstrip(".")
            raise MessageError(
                f'data does not hold its _outputPath {raw_path!r}: expected key "{key}" '
                f"inside {('data.' + where) if where else 'data'}",
                pointer=pointer,
            )
        node = node[key]
    return node
