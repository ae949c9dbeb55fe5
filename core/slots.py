"""Making frozen attrs instances quickly: :func:`maker`.

attrs' frozen ``__init__`` sets each field by name: through ``object.__setattr__`` for a
slotted class (frozen classes forbid the ordinary assignment), one dict entry at a time
for a class whose instances keep a ``__dict__``. The machine makes one ``RunState`` per
transition, and one ``Invocation`` and one ``Returned`` per call that runs; a run result
one ``CallOutcome`` per call; the compiler a ``Node``, a ``CallInfo`` and the rest for
every call: that is paid for every call. A maker makes the same instance without
``__init__``, in straight-line code:

- a slotted class gets its slots set through their own descriptors, in about 60% of the
  time of attrs' ``__init__`` (the per-call values: a slot holds a field in 8 bytes);
- a class whose instances keep their fields in a ``__dict__`` (``slots=False``) gets the
  dict built whole, in one step, and handed to the instance in one call (the run state,
  whose fifteen fields cost fifteen descriptor calls as slots; one state lives at a time,
  so its dict costs no memory that counts). A chain's calls take 4% less time with it
  than with attrs' ``__init__`` filling the dict (``bench/peers.py``'s chain, 1,000
  nodes, the two alternating in one process), and 2.5% fewer instructions than with
  slots.

The straight-line code is compiled (about 0.1 to 0.3 ms a class, 2 ms for the twelve
classes ``obelisk validate`` imports), so it is built only once a class has made
:data:`WARM_UP` instances: until then the maker calls the class itself. A command that
makes a few (``obelisk validate`` of a short plan) never pays for it; a plan of
thousands of calls pays it once. The built code then replaces the maker's own code, so
its callers, holding the same function, run it directly.

A maker is used only where a check at import finds that the same steps, done one by one,
make what the class's own ``__init__`` makes, field by field; the built code is checked
again; otherwise the class itself is the maker.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType
from typing import Any, TypeVar

T = TypeVar("T")

#: Instances a maker leaves to the class's own ``__init__`` before it builds its code.
WARM_UP = 64


def maker(cls: type[T]) -> Callable[..., T]:
    """A function taking ``cls``'s fields positionally, in their order, and making the
    instance ``cls(*fields)`` makes: through its slots or its ``__dict__`` when that is
    checked the same, else ``cls`` itself (a class that is not attrs, or whose
    ``__init__`` does more than set its fields: validators, converters, hooks). Every
    field must be given (defaults are not applied)."""
    plan = _plan(cls)
    if plan is None or not _same(cls, _stepwise(cls, plan)):
        return cls
    # The maker's globals are its own namespace, shared with the code built later, which
    # reads its helpers from there as globals (the fastest read).
    namespace: dict[str, Any] = {"__builtins__": __builtins__, "_cls": cls,
                                 "_build": _build}
    make: Callable[..., T] = FunctionType(_WARMING, namespace, "make")
    namespace["_state"] = {"left": WARM_UP, "plan": plan, "make": make,
                           "namespace": namespace, "arity": len(plan[1])}
    return make


def _warming(*fields: Any) -> Any:
    # The code of every maker until it is built: the class itself makes the instance, and
    # the WARM_UP-th call builds the maker's own code (its globals are its namespace: see
    # maker). The names below are those of that namespace.
    if len(fields) != _state["arity"]:  # type: ignore[name-defined]  # noqa: F821
        # As the built code will refuse it: every field, no default applied.
        raise TypeError(f"{_cls.__qualname__}'s maker takes {_state['arity']} fields, "  # type: ignore[name-defined]  # noqa: F821
                        f"{len(fields)} given")
    _state["left"] -= 1  # type: ignore[name-defined]  # noqa: F821
    if _state["left"] <= 0:  # type: ignore[name-defined]  # noqa: F821
        _build(_state)  # type: ignore[name-defined]  # noqa: F821
    return _cls(*fields)  # type: ignore[name-defined]  # noqa: F821


_WARMING = _warming.__code__


#: How the fields are set: ("slots", setters by field) or ("dict", the __dict__ setter),
#: with the field names.
_Plan = tuple[str, list[str], Any]


def _plan(cls: type) -> _Plan | None:
    try:
        fields = cls.__attrs_attrs__  # type: ignore[attr-defined]
        names = [a.name for a in fields]
    except AttributeError:  # not attrs
        return None
    if hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__") or any(
            a.validator is not None or a.converter is not None or not a.init for a in fields):
        return None  # __init__ does more than set the fields
    holder = cls.__dict__.get("__dict__")  # the instances' __dict__, when the class adds it
    if holder is not None:
        return "dict", names, holder.__set__
    try:
        return "slots", names, [cls.__dict__[name].__set__ for name in names]
    except KeyError:  # a field neither in a slot of its own nor in a __dict__
        return None


def _stepwise(cls: type[T], plan: _Plan) -> Callable[..., T]:
    """What the built code does, step by step (what the check at import runs)."""
    route, names, how = plan
    new = object.__new__

    def make(*fields: Any) -> T:
        obj = new(cls)
        if route == "dict":
            how(obj, dict(zip(names, fields, strict=True)))
        else:
            for setter, value in zip(how, fields, strict=True):
                setter(obj, value)
        return obj

    return make


def _compiled(cls: type, plan: _Plan, namespace: dict[str, Any]) -> Any:
    """The code of the same steps in straight-line code, reading its helpers from
    ``namespace`` (where they are put) as globals."""
    route, names, how = plan
    args = ", ".join(f"a{i}" for i in range(len(names)))
    namespace["_new"] = object.__new__
    if route == "dict":
        namespace["_set_dict"] = how
        entries = ", ".join(f"{name!r}: a{i}" for i, name in enumerate(names))
        body = f"    _set_dict(obj, {{{entries}}})\n"
    else:
        namespace.update({f"_set_{i}": setter for i, setter in enumerate(how)})
        body = "".join(f"    _set_{i}(obj, a{i})\n" for i in range(len(names)))
    source = f"def _built({args}):\n    obj = _new(_cls)\n{body}    return obj\n"
    made: dict[str, Any] = {}  # the function lands here, its globals the namespace
    exec(compile(source, f"<obelisk maker for {cls.__qualname__}>", "exec"), namespace, made)  # noqa: S102
    return made["_built"].__code__


def _build(state: dict[str, Any]) -> None:
    """Give the maker its built code, if that code passes the check too. Building is
    idempotent: two threads that both get here build the same code (each its own
    function: only the helpers, the same values, are put in the shared namespace), and
    either may replace the maker's (no lock: this module does no concurrency)."""
    if state.get("built"):
        return
    state["built"] = True
    make, namespace = state["make"], state["namespace"]
    cls = namespace["_cls"]
    code = _compiled(cls, state["plan"], namespace)
    if _same(cls, FunctionType(code, namespace)):
        make.__code__ = code


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
        ) and getattr(ours, "__dict__", None) == getattr(theirs, "__dict__", None) and (
            # Nothing hidden that __init__ sets either (attrs' cached hash, say).
            getattr(cls, "__hash__", None) is None or hash(ours) == hash(theirs))
    except Exception:  # noqa: BLE001 - a class that validates or converts its fields
        return False
