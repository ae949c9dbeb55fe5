"""Making frozen attrs instances quickly: :func:`maker`.

attrs' frozen ``__init__`` sets each field by name: through ``object.__setattr__`` for a
slotted class (frozen classes forbid the ordinary assignment), one dict entry at a time
for a class whose instances keep a ``__dict__``. The machine makes one ``RunState`` per
transition, and one ``Invocation`` and one ``Returned`` per call that runs; a run result
one ``CallOutcome`` per call: that is paid for every call. A maker makes the same
instance without ``__init__``, in straight-line code:

- a slotted class gets its slots set through their own descriptors, in about 60% of the
  time of attrs' ``__init__`` (the per-call values: a slot holds a field in 8 bytes);
- a class whose instances keep their fields in a ``__dict__`` (``slots=False``) gets the
  dict built whole, in one step, and handed to the instance in one call (the run state,
  whose fifteen fields cost fifteen descriptor calls as slots; one state lives at a time,
  so its dict costs no memory that counts). A chain's calls take 4% less time with it
  than with attrs' ``__init__`` filling the dict (``bench/peers.py``'s chain, 1,000
  nodes, the two alternating in one process), and 2.5% fewer instructions than with
  slots.

A maker is used only where a check at import finds it makes what the class's own
``__init__`` makes, field by field; otherwise the class itself is the maker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def maker(cls: type[T]) -> Callable[..., T]:
    """A function taking ``cls``'s fields positionally, in their order, and making the
    instance ``cls(*fields)`` makes: through its slots or its ``__dict__`` when that is
    checked the same, else ``cls`` itself (a class that is not attrs, or whose
    ``__init__`` does more than set its fields: validators, converters, hooks). Every
    field must be given (defaults are not applied)."""
    made = _generated(cls)
    return made if made is not None and _same(cls, made) else cls


def _generated(cls: type[T]) -> Callable[..., T] | None:
    try:
        fields = cls.__attrs_attrs__  # type: ignore[attr-defined]
        names = [a.name for a in fields]
    except AttributeError:  # not attrs
        return None
    if hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__") or any(
            a.validator is not None or a.converter is not None or not a.init for a in fields):
        return None  # __init__ does more than set the fields
    args = ", ".join(f"a{i}" for i in range(len(names)))
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    holder = cls.__dict__.get("__dict__")  # the instances' __dict__, when the class adds it
    if holder is not None:
        namespace["_set_dict"] = holder.__set__
        entries = ", ".join(f"{name!r}: a{i}" for i, name in enumerate(names))
        body = f"    _set_dict(obj, {{{entries}}})\n"
    else:
        try:
            namespace.update({f"_set_{i}": cls.__dict__[name].__set__
                              for i, name in enumerate(names)})
        except KeyError:  # a field neither in a slot of its own nor in a __dict__
            return None
        body = "".join(f"    _set_{i}(obj, a{i})\n" for i in range(len(names)))
    source = f"def make({args}):\n    obj = _new(_cls)\n{body}    return obj\n"
    exec(compile(source, f"<obelisk maker for {cls.__qualname__}>", "exec"), namespace)  # noqa: S102
    return namespace["make"]  # type: ignore[no-any-return]


def _same(cls: type[T], make: Callable[..., T]) -> bool:
    # Distinct objects (and small numbers, for fields attrs might convert) in every
    # field: the maker's instance must hold each exactly where __init__ puts it.
    try:
        count = len(cls.__attrs_attrs__)  # type: ignore[attr-defined]
        args = [object() if i % 2 else i for i in range(count)]
        ours, theirs = make(*args), cls(*args)
        return type(ours) is cls and all(
            getattr(ours, a.name) is getattr(theirs, a.name) is arg
            for a, arg in zip(cls.__attrs_attrs__, args, strict=True)  # type: ignore[attr-defined]
        ) and getattr(ours, "__dict__", None) == getattr(theirs, "__dict__", None)  # no more
    except Exception:  # noqa: BLE001 - a class that validates or converts its fields
        return False
