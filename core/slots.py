"""Making frozen attrs instances without their ``__init__``: the pieces a maker is
written with, and the check that keeps it honest.

attrs' frozen ``__init__`` sets each field by name through ``object.__setattr__`` (frozen
classes forbid the ordinary assignment). The run makes one ``RunState`` per transition,
and one ``Invocation``, one ``Returned`` and one ``CallOutcome`` per call: for each, a
*maker* written beside its class, keyword-only, makes the same instance by setting its
slots through their own descriptors (:func:`slot_setters`), or by handing a slot-less
instance its ``__dict__`` built whole (:func:`dict_setter`, the run state's fifteen
fields). Measured with ``bench/instructions.py`` (see docs/performance.md): without the
four, a chain of 1,000 no-op calls took 6.1% more instructions a node (149,620 against
140,967) and a fan-out 3.8%. (The compiler's makers, 4.1% of a compile, were removed: a
fast path earns its place with 5% on a named bench.)

:func:`checked` keeps a maker only when it makes, field by field, what the class's own
``__init__`` makes; otherwise the class itself is used, called with the same keywords.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Makes a bare instance of a class (its ``__init__`` not called).
new = object.__new__


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of ``cls``'s fields' slots, in the fields' order (a field's descriptor
    sets it even on a frozen instance)."""
    return tuple(cls.__dict__[a.name].__set__ for a in cls.__attrs_attrs__)  # type: ignore[attr-defined]


def dict_setter(cls: type) -> Callable[[Any, dict[str, Any]], None]:
    """What hands an instance of ``cls`` (a class whose instances keep a ``__dict__``) its
    whole ``__dict__`` in one call."""
    return cls.__dict__["__dict__"].__set__  # type: ignore[no-any-return]


def checked(cls: type[T], make: Callable[..., T]) -> Callable[..., T]:
    """``make`` when it makes what ``cls(**fields)`` makes, else ``cls`` itself.

    A class whose ``__init__`` does more than set its fields (validators, converters,
    hooks) is its own maker. Otherwise ``make`` is tried with a distinct object in every
    field (and small numbers, for fields attrs might convert): its instance must hold
    each exactly where ``__init__`` puts it, with nothing else set (``__dict__`` alike)
    and the same hash.
    """
    try:
        attributes = cls.__attrs_attrs__  # type: ignore[attr-defined]
        if hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__") or any(
                a.validator is not None or a.converter is not None for a in attributes):
            return cls  # __init__ does more than set the fields
        names = [a.name for a in attributes]
        fields = {name: object() if i % 2 else i for i, name in enumerate(names)}
        ours, theirs = make(**fields), cls(**fields)
        same = type(ours) is cls and all(
            getattr(ours, name) is getattr(theirs, name) is value
            for name, value in fields.items()
        ) and getattr(ours, "__dict__", None) == getattr(theirs, "__dict__", None) and (
            getattr(cls, "__hash__", None) is None or hash(ours) == hash(theirs))
    except Exception:  # noqa: BLE001 - a class that validates or converts its fields
        same = False
    return make if same else cls
