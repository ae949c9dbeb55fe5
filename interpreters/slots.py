"""Making frozen attrs instances quickly: :func:`maker`.

attrs' frozen, slotted ``__init__`` sets each field through ``object.__setattr__`` by name
(frozen classes forbid the ordinary assignment). The machine makes one ``RunState`` per
transition and a run result one ``CallOutcome`` per call, so that is paid for every call.
A maker sets the slots through their own descriptors instead, in straight-line code:
the same object in about 60% of the time. It is used only where a check at import finds
it makes what the class's own ``__init__`` makes, field by field; otherwise the class
itself is the maker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def maker(cls: type[T]) -> Callable[..., T]:
    """A function taking ``cls``'s fields positionally, in their order, and making the
    instance ``cls(*fields)`` makes: through the slots when that is checked the same,
    else ``cls`` itself (a class that is not slotted attrs, or whose ``__init__`` does more
    than set its fields: validators, converters, hooks). Every field must be given
    (defaults are not applied)."""
    made = _slotted(cls)
    return made if made is not None and _same(cls, made) else cls


def _slotted(cls: type[T]) -> Callable[..., T] | None:
    try:
        fields = cls.__attrs_attrs__  # type: ignore[attr-defined]
        names = [a.name for a in fields]
        setters = {f"_set_{i}": cls.__dict__[name].__set__ for i, name in enumerate(names)}
    except (AttributeError, KeyError):  # not attrs, or not slotted
        return None
    if hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__") or any(
            a.validator is not None or a.converter is not None or not a.init for a in fields):
        return None  # __init__ does more than set the fields
    args = ", ".join(f"a{i}" for i in range(len(names)))
    body = "".join(f"    _set_{i}(obj, a{i})\n" for i in range(len(names)))
    source = f"def make({args}):\n    obj = _new(_cls)\n{body}    return obj\n"
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, **setters}
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
            for a, arg in zip(cls.__attrs_attrs__, args, strict=True))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a class that validates or converts its fields
        return False
