"""Re-exported names imported on first use (PEP 562), for packages that gather names.

A package such as ``obelisk`` or ``obelisk.interpreters`` lists many names from its
modules. Importing all of them up front would make every user pay for all of them:
``obelisk --help`` would import the LLM adapters, the journal's sqlite3 and asyncio. With
:class:`LazyExports` the package names each name's home module instead, imports it when
the name is first used and keeps the value, so later uses are plain attribute reads. The
package still imports the same names under ``typing.TYPE_CHECKING`` so that type checkers
see them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any


class LazyExports:
    """The names a package exports lazily, and its module ``__getattr__`` and ``__dir__``.

    ``homes[module]`` lists the names that come from ``module`` under the same name;
    ``renamed[name]`` is the ``(module, attribute)`` of a name spelled differently there;
    ``plugins[module]`` names a module imported with ``module`` because it plugs in what
    ``module`` needs (the compiler's reference parser, which a context needs to read
    ``_outputPath`` and which core may not import).
    Use: ``__getattr__, __dir__ = EXPORTS.getattr, EXPORTS.dir`` in the package.
    """

    def __init__(self, namespace: MutableMapping[str, Any], homes: Mapping[str, Sequence[str]],
                 renamed: Mapping[str, tuple[str, str]] | None = None,
                 plugins: Mapping[str, str] | None = None) -> None:
        self.namespace = namespace
        #: Each lazily exported name and its ``(module, attribute)``.
        self.where = {name: (module, name) for module, names in homes.items() for name in names}
        self.where.update(renamed or {})
        self.plugins = dict(plugins or {})

    def getattr(self, name: str) -> Any:
        """Import ``name``'s home module, keep the value in the package, return it."""
        try:
            module, attribute = self.where[name]
        except KeyError:
            package = self.namespace.get("__name__")
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        if module in self.plugins:
            importlib.import_module(self.plugins[module])
        value = getattr(importlib.import_module(module), attribute)
        self.namespace[name] = value  # the next use is an ordinary module attribute
        return value

    def dir(self) -> list[str]:
        """The package's names, those not imported yet included."""
        return sorted(set(self.namespace) | set(self.where))
