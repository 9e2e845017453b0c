"""``build_ext`` for setuptools that also writes the typed Python of the library it built.

Use it as pybind11's ``setup_helpers.build_ext`` is used::

    from tvmffi_gen.integration.setuptools import build_ext
    setup(ext_modules=[Extension("mypkg._lib", ...)], cmdclass={"build_ext": build_ext})

and say what to generate in ``pyproject.toml`` (one table, or an array of tables for several)::

    [tool.tvmffi-gen]
    mode = "stubs"             # "stubs": .pyi beside a package built on tvm_ffi; "package": a package on tvmffi-runtime
    package = "mypkg"          # the package's import name
    extension = "mypkg._lib"   # the Extension whose library is read
    prefix = ["mypkg"]         # package mode: the registry namespaces to keep (default: all)

Besides ``mode``, ``package`` and ``extension``, an entry takes the generator's options a build
may give, each by its key (``tvmffi_gen.integration.options``).

After the extensions are built, each entry runs one step of :mod:`tvmffi_gen.integration.step` into the
build's package tree (``build/lib.*/<package>``, or the source tree for an in-place build), so the
wheel ``pip wheel .`` makes carries the output; a step regenerates only when what it reads changed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

# setuptools ships no type information (no py.typed): its classes are Any to a type checker
from setuptools.command.build_ext import build_ext as _setuptools_build_ext  # type: ignore[import-untyped, unused-ignore]
from setuptools.errors import SetupError  # type: ignore[import-untyped, unused-ignore]

from .options import build_keys, generator_arguments, not_read_by
from .step import Step, lacks_runtime, python_sources, run_step

__all__ = ["GenerationConfig", "build_ext", "read_config"]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - on Python 3.10 setuptools requires tomli (its vendored copy is importable)
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]


class ConfigError(SetupError):  # type: ignore[misc, unused-ignore]
    """``[tool.tvmffi-gen]`` is missing something or holds a wrong value; the message names it."""


@dataclass(frozen=True)
class GenerationConfig:
    """One entry of ``[tool.tvmffi-gen]``."""

    mode: str
    package: str
    extension: str
    #: the generator's options the entry gives, as its command line (``--prefix ns``)
    options: tuple[str, ...] = ()


#: the keys of an entry besides the generator's options (``build_keys``)
_STEP_KEYS = ("mode", "package", "extension")


def _entry(table: dict[str, Any], where: str) -> GenerationConfig:
    known = [*_STEP_KEYS, *build_keys()]
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(known)})")
    mode = table.get("mode", "package")
    if mode not in ("package", "stubs"):
        raise ConfigError(f'{where}: mode = {mode!r}: give "package" or "stubs"')
    missing = [k for k in ("package", "extension") if not isinstance(table.get(k), str) or not table[k]]
    if missing:
        raise ConfigError(f"{where}: give {' and '.join(missing)} (a string each)")
    refused = not_read_by(mode, table)
    if refused:
        keys = ", ".join(b.key for b in refused)
        raise ConfigError(f"{where}: {keys}: an option of a generated package, not with mode = 'stubs'")
    try:
        options = generator_arguments(table, where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return GenerationConfig(mode, table["package"], table["extension"], options)


def read_config(pyproject: Path) -> list[GenerationConfig]:
    """The entries of ``[tool.tvmffi-gen]`` in ``pyproject`` (none when it has no such table)."""
    if not pyproject.is_file():
        return []
    with pyproject.open("rb") as f:
        tool = tomllib.load(f).get("tool", {}).get("tvmffi-gen")
    if tool is None:
        return []
    tables = cast("list[dict[str, Any]]", tool if isinstance(tool, list) else [tool])
    return [_entry(t, f"{pyproject} [tool.tvmffi-gen]") for t in tables]


class build_ext(_setuptools_build_ext):  # type: ignore[misc, unused-ignore]
    """setuptools' ``build_ext``, then the generation steps of ``[tool.tvmffi-gen]``."""

    def run(self) -> None:
        super().run()
        for config in read_config(Path("pyproject.toml")):
            self._generate(config)

    def _generate(self, config: GenerationConfig) -> None:
        names = [ext.name for ext in self.extensions]
        if config.extension not in names:
            raise SetupError(
                f"[tool.tvmffi-gen] extension = {config.extension!r}: no such Extension (built: {', '.join(names)})"
            )
        library = Path(self.get_ext_fullpath(config.extension))
        # the tree the package is built into: the build folder, or the sources for --inplace
        root = library.parents[len(config.extension.split(".")) - 1]
        destination = root.joinpath(*config.package.split("."))
        work = Path(self.build_temp) / "tvmffi_gen" / f"{config.package}-{config.mode}"
        step = Step(
            mode="stubs" if config.mode == "stubs" else "package",
            library=library,
            package=config.package,
            destination=destination,
            work=work,
            options=config.options,
            sources=root if config.mode == "stubs" else None,
            source_files=python_sources(root, config.package) if config.mode == "stubs" else (),
        )
        if config.mode == "package":
            self._check_runtime_requirement()
        status = run_step(step, print)
        if status != 0:
            raise SetupError(f"tvmffi-gen failed for {config.package} (status {status}): see its message above")

    def _check_runtime_requirement(self) -> None:
        """A generated package imports tvmffi_runtime: warn when the distribution does not require it."""
        # [project] dependencies, which setuptools reads into the distribution's install_requires
        warning = lacks_runtime(list(getattr(self.distribution, "install_requires", None) or []))
        if warning:
            print(warning, file=sys.stderr)
