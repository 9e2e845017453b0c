"""The import lines a generated module starts with: the standard ones, by the alias its code uses,
and those of ``--use`` packages' modules."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.uses import used_module_alias

__all__ = ["STANDARD_IMPORTS", "ImportLine", "standard_import_groups", "used_imports"]


@dataclass(frozen=True)
class ImportLine:
    """``import MODULE as ALIAS``, as the templates write it."""

    module: str
    alias: str


#: The standard imports a generated module may need, by the alias its code uses, in groups (a
#: blank line between groups; a group none of whose aliases is used is left out whole).
STANDARD_IMPORTS: list[dict[str, str]] = [
    {
        "_os": "import os as _os",
        "_ctypes": "import ctypes as _ctypes",
        "_t": "import typing as _t",
        "_abc": "from collections import abc as _abc",
    },
    {"_rt": "import tvmffi_runtime as _rt", "_bind": "from tvmffi_runtime import bind as _bind"},
]


def standard_import_groups(aliases: set[str]) -> list[list[str]]:
    """The import lines for ``aliases`` (keys of ``STANDARD_IMPORTS``), by group, empty groups
    left out."""
    groups = [[line for alias, line in group.items() if alias in aliases] for group in STANDARD_IMPORTS]
    return [group for group in groups if group]


def used_imports(modules: set[str]) -> list[ImportLine]:
    """Imports of ``--use`` packages' modules (bases and annotations from them)."""
    return [ImportLine(module, used_module_alias(module)) for module in sorted(modules)]
