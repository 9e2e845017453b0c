"""Whether a package name can be used: Python can import it, and nothing importable here has it.

A package is imported by its folder's name, so ``-o my-geom`` is refused with advice that works
when followed; a name an importable module already has (``numpy``) is refused unless ``--force``,
except a package tvmffi-gen wrote: an output folder (its manifest) or a copy ``pip install`` put
in site-packages (its header line).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..model.package import GENERATED_BY, GenerationError, is_package_name, validate_package_name
from ..write.project import project_package_name
from ..write.writer import MANIFEST

__all__ = ["check_package_name"]


def check_package_name(name: str, explicit: bool, output: Path, force: bool) -> None:
    """Refuse a package name Python cannot import, or one that shadows a module already
    importable here (``numpy``, ``tvmffi_runtime``) unless ``force``: GenerationError says why."""
    if not explicit and not name.isidentifier():
        raise GenerationError(
            f"-o {output}: the folder's name {name!r} is not a valid package name (a Python"
            f" identifier), and a package is imported by its folder's name; {_package_folder_advice(output)}"
        )
    validate_package_name(name)
    top = name.split(".")[0]
    where = _importable_elsewhere(top, output)
    if where is not None and not force:
        raise GenerationError(
            f"package name {top!r} is already an importable module ({where}): the generated package"
            " would shadow it or be shadowed by it; choose another name (--name), or pass --force"
        )


def _package_folder_advice(output: Path) -> str:
    """What to give instead of ``-o OUTPUT`` whose name is no identifier: a folder named like a
    package, or OUTPUT as a ``--project`` folder, whose package takes the name with ``-`` and
    ``.`` as ``_`` (``-o my-geom`` -> ``-o my_geom``, or ``-o my-geom --project``)."""
    package = project_package_name(output)
    if not is_package_name(package):  # a project's package name holds no dot
        return "name the folder like a package, such as mypkg (or give --project -o OUT --name mypkg)"
    return (
        f"give -o {output.with_name(package)}, or make {output} a project folder holding the"
        f" package {package} with --project"
    )


def _importable_elsewhere(top: str, output: Path) -> str | None:
    """Where the top-level module ``top`` is found, unless it is this output folder, another
    package tvmffi-gen wrote, or a namespace package (a bare folder, which any package beats)."""
    import importlib.util

    if top in sys.builtin_module_names:
        return "built in"
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin in (None, "namespace"):
        return None
    if not spec.has_location:
        return spec.origin  # "frozen", "built-in"
    found = Path(spec.origin).resolve()
    folder = found.parent if found.name == "__init__.py" else found
    if folder == output.resolve() or _written_by_tvmffi_gen(folder):
        return None
    return str(found)


def _written_by_tvmffi_gen(folder: Path) -> bool:
    """Whether the package in ``folder`` is one tvmffi-gen wrote: the output folder holds our
    manifest; an installed copy (``pip install`` of a ``--project``, which ships no manifest)
    is known by the header line its ``__init__.py`` starts with."""
    if (folder / MANIFEST).is_file():
        return True
    try:
        with open(folder / "__init__.py", encoding="utf-8") as init:
            return init.readline().startswith(GENERATED_BY)
    except (OSError, UnicodeDecodeError):
        return False
