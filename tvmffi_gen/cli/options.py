"""The options of ``tvmffi-gen``, each declared once, as a field of ``Options``.

A field's declaration (``option(...)``) holds what every user of the option needs: its flags and
help (the parser), which kinds of run read it (an option a run would not read is refused, naming
it, rather than ignored: ``option_conflict``), the option it needs beside it, and its
``[tool.tvmffi-gen]`` key when a build may give it (the setuptools keys, the CMake keyword and the
build step's command line derive from that: ``tvmffi_gen.integration.options``). ``generate()``
and the run read the parsed ``Options``, typed.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

from .. import __version__

__all__ = ["Option", "Options", "declared", "option_conflict", "parser"]

#: The kinds of run: a package from a library, stubs for a package (``--stubs-for``), or the
#: exports of a library (``--list-exports``).
Run = Literal["package", "stubs", "exports"]
_PACKAGE: frozenset[Run] = frozenset({"package"})
_STUBS: frozenset[Run] = frozenset({"stubs"})
_WRITING: frozenset[Run] = frozenset({"package", "stubs"})
_ALL: frozenset[Run] = frozenset({"package", "stubs", "exports"})

_T = TypeVar("_T")


@dataclass(frozen=True)
class Option:
    """One option's declaration: how it is spelled and parsed, and who reads it."""

    #: its spellings (``("-o", "--output")``), or the positional's name (``("library",)``)
    flags: tuple[str, ...]
    help: str
    #: the kinds of run that read it; any other refuses it
    runs: frozenset[Run]
    #: the parser's keywords: ``action``, ``metavar``, ``nargs``, ``const``, ``choices``, ``type``
    parse: dict[str, Any]
    #: ``"stubs"``: listed under --stubs-for's heading; ``"edits"``: exclusive with the others so marked
    group: str | None = None
    #: the option this one is refused without (``--project``, ``--stubs-for``), and why it needs it
    requires: str | None = None
    purpose: str = ""
    #: its key in ``[tool.tvmffi-gen]`` when a build may give it (CMake: the key in capitals); the
    #: build step passes it on to the generator and keys its stamp on it
    build_key: str | None = None

    @property
    def name(self) -> str:
        """How messages name it: its first spelling (``-o``), or the positional's in capitals."""
        return self.flags[0] if self.flags[0].startswith("-") else self.flags[0].upper()


def option(
    default: _T,
    *flags: str,
    help: str,
    runs: frozenset[Run],
    group: str | None = None,
    requires: str | None = None,
    purpose: str = "",
    build_key: str | None = None,
    **parse: Any,
) -> _T:
    """A field of ``Options`` declared as the option ``flags``: its default, and its ``Option``."""
    declaration = Option(flags, help, runs, parse, group, requires, purpose, build_key)
    return field(default=default, metadata={"option": declaration})


@dataclass(frozen=True)
class Options:
    """A command line of ``tvmffi-gen``, parsed: each field is one option, in ``--help``'s order."""

    library: str | None = option(
        None,
        "library",
        nargs="?",
        runs=_PACKAGE,
        help="shared library to load (default: apache-tvm-ffi's testing library,"
        " libtvm_ffi_testing.so / .dylib or tvm_ffi_testing.dll)",
    )
    output: str | None = option(
        None,
        "-o",
        "--output",
        runs=_WRITING,
        help="output package folder (with --project: the project folder holding it); required unless --list-exports",
    )
    name: str | None = option(None, "--name", runs=_PACKAGE, help="package name (default: the output folder's name)")
    prefix: tuple[str, ...] = option(
        (),
        "--prefix",
        action="append",
        metavar="NS",
        runs=_PACKAGE,
        build_key="prefix",
        help="keep only this namespace (repeatable), e.g. --prefix testing",
    )
    preload: tuple[str, ...] = option(
        (),
        "--preload",
        action="append",
        metavar="LIB",
        runs=_WRITING,
        help="load this library first (its registrations are not generated)",
    )
    use: tuple[str, ...] = option(
        (),
        "--use",
        action="append",
        metavar="PKG",
        runs=_PACKAGE,
        help="a package generated before for a --preload library: its classes become the"
        " bases and annotations of the types deriving from them (repeatable)",
    )
    bundle: bool = option(
        False, "--bundle", action="store_true", runs=_PACKAGE, help="copy the library into the package"
    )
    check: bool = option(
        False,
        "--check",
        action="store_true",
        runs=_WRITING,
        help="write nothing; list files that would change; exit 1 if any",
    )
    verify: str | None = option(
        None,
        "--verify",
        nargs="?",
        const="auto",
        choices=["auto", "mypy", "pyright", "both"],
        runs=_PACKAGE,
        help="type-check the output as a user's project would: mypy --strict, and pyright "
        "strict when installed (auto, the default), or the checker(s) named; "
        "fail on any error",
    )
    project: bool = option(
        False,
        "--project",
        action="store_true",
        runs=_WRITING,
        help="write an installable project: OUT/pyproject.toml beside the package OUT/NAME/",
    )
    project_version: str | None = option(
        None,
        "--project-version",
        metavar="VERSION",
        runs=_PACKAGE,
        requires="--project",
        help="version written into the project's pyproject.toml (default 0.1.0)",
    )
    runtime_requirement: str | None = option(
        None,
        "--runtime-requirement",
        metavar="SPEC",
        runs=_PACKAGE,
        requires="--project",
        help="with --project: the project's PEP 508 requirement on tvmffi-runtime, e.g. a"
        " direct reference 'tvmffi-runtime @ file:///path/to/tvmffi_runtime-....whl'"
        " (default: tvmffi-runtime>=0.1.0,<0.2)",
    )
    portable: bool = option(
        False,
        "--portable",
        action="store_true",
        runs=_PACKAGE,
        help="record no absolute paths (a library beside the package is found only relative to it)",
    )
    force: bool = option(
        False,
        "--force",
        action="store_true",
        runs=_WRITING,
        help="write into a non-empty folder not generated by tvmffi-gen, or under a name an"
        " importable module already has",
    )
    keep_edits: bool = option(
        False,
        "--keep-edits",
        action="store_true",
        group="edits",
        runs=_PACKAGE,
        help="keep your edits to generated members instead of the newly generated ones",
    )
    overwrite_edits: bool = option(
        False,
        "--overwrite-edits",
        action="store_true",
        group="edits",
        runs=_PACKAGE,
        help="replace your edits to generated members (each is listed)",
    )
    from_snapshot: str | None = option(
        None,
        "--from-snapshot",
        metavar="FILE",
        runs=_PACKAGE,
        help="generate from a saved snapshot instead of a library",
    )
    save_snapshot: str | None = option(
        None, "--save-snapshot", metavar="FILE", runs=_PACKAGE, help="also save the registry snapshot as JSON"
    )
    timeout: float = option(120.0, "--timeout", type=float, runs=_ALL, help="seconds to wait for the library to load")
    list_exports: str | None = option(
        None,
        "--list-exports",
        metavar="LIB",
        runs=frozenset({"exports"}),
        help="print the TVM FFI functions an ELF, Mach-O or PE library exports (any platform's,"
        " read without loading it here), then exit",
    )
    quiet: bool = option(False, "-q", "--quiet", action="store_true", runs=_ALL, help="print errors only")
    verbose: bool = option(False, "-v", "--verbose", action="store_true", runs=_ALL, help="print each step and warning")
    stubs_for: str | None = option(
        None,
        "--stubs-for",
        metavar="PKG",
        group="stubs",
        runs=_STUBS,
        help="write PEP 561 stubs OUT/PKG-stubs for an installed package built on TVM FFI"
        " (tvm, tvm_ffi) instead of generating a package from a library",
    )
    exclude: tuple[str, ...] = option(
        (),
        "--exclude",
        action="append",
        metavar="GLOB",
        group="stubs",
        runs=_STUBS,
        requires="--stubs-for",
        purpose="chooses the modules of --stubs-for PKG",
        help="with --stubs-for: skip the modules matching this glob and their subtrees",
    )
    no_cache: bool = option(
        False,
        "--no-cache",
        action="store_true",
        group="stubs",
        runs=_STUBS,
        requires="--stubs-for",
        purpose="is for the cache of --stubs-for PKG",
        help="with --stubs-for: neither read nor write the cache of stubgen's and libcst's results"
        " (kept in $TVMFFI_GEN_CACHE_DIR, else $XDG_CACHE_HOME/tvmffi-gen or ~/.cache/tvmffi-gen)",
    )
    cmakedir: bool = option(
        False,
        "--cmakedir",
        action="store_true",
        runs=_ALL,
        help="print the folder of tvmffi_gen-config.cmake (cmake -Dtvmffi_gen_DIR=...), then exit",
    )

    @classmethod
    def parse(cls, argv: list[str] | None = None) -> Options:
        """``argv`` (default: the process's) parsed; argparse's usage error (SystemExit 2) if not."""
        return cls.from_namespace(parser().parse_args(argv))

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> Options:
        """The options argparse parsed (its lists as tuples)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value: object = getattr(args, f.name)
            values[f.name] = tuple(cast("list[object]", value)) if isinstance(value, list) else value
        return cls(**values)

    def given(self, dest: str) -> bool:
        """Whether the option of field ``dest`` was given (its value differs from its default)."""
        return bool(getattr(self, dest) != _field(dest).default)


def declared() -> Iterator[tuple[str, Option]]:
    """Each option's field name and declaration, in ``--help``'s order."""
    for f in dataclasses.fields(Options):
        yield f.name, f.metadata["option"]


def _field(dest: str) -> dataclasses.Field[Any]:
    return next(f for f in dataclasses.fields(Options) if f.name == dest)


def parser() -> argparse.ArgumentParser:
    """The command line's parser: every option ``Options`` declares, and ``--version``."""
    p = argparse.ArgumentParser(
        prog="tvmffi-gen",
        description="Generate a typed Python package for a library built on TVM FFI.",
    )
    groups: dict[str, Any] = {
        "stubs": p.add_argument_group("stubs for an existing package"),
        "edits": p.add_mutually_exclusive_group(),
    }
    for dest, decl in declared():
        add_argument(groups[decl.group] if decl.group else p, dest, decl)
    p.add_argument("--version", action="version", version=f"tvmffi-gen {__version__}")
    return p


def add_argument(p: argparse.ArgumentParser | argparse._ActionsContainer, dest: str, decl: Option) -> None:
    """Add the option ``decl`` (field ``dest`` of ``Options``) to a parser or group."""
    default = _field(dest).default
    keywords: dict[str, Any] = {
        "default": list(cast("tuple[object, ...]", default)) if isinstance(default, tuple) else default,
        **decl.parse,
    }
    if decl.flags[0].startswith("-"):
        keywords["dest"] = dest
    p.add_argument(*decl.flags, help=decl.help, **keywords)


def _run_of(args: Options) -> Run:
    if args.list_exports is not None:
        return "exports"
    return "stubs" if args.stubs_for else "package"


_REFUSALS: dict[Run, str] = {
    "exports": "--list-exports LIB reads one library and writes nothing: {} does not apply",
    "stubs": "--stubs-for writes stubs, not a package: {} does not apply to it",
    "package": "{} does not apply to a package run",
}


def option_conflict(args: Options) -> str | None:
    """The options of this command line that the run would not read, said as an error, or None."""
    if args.timeout <= 0:
        return f"--timeout {args.timeout:g}: give the seconds to wait, a number above 0"
    run = _run_of(args)
    given = [(dest, decl) for dest, decl in declared() if args.given(dest)]
    extra = [decl.name for _dest, decl in given if run not in decl.runs]
    if extra and run == "exports":
        return _REFUSALS[run].format(", ".join(extra))
    for _dest, decl in given:
        if decl.requires == "--stubs-for" and not args.stubs_for:
            return f"{decl.name} {decl.purpose}: give --stubs-for too"
    if extra:
        return _REFUSALS[run].format(", ".join(extra))
    unmet = [decl.name for _dest, decl in given if decl.requires == "--project" and not args.project]
    if unmet:
        what = "they are" if len(unmet) > 1 else "it is"
        return f"{', '.join(unmet)}: {what} for --project's pyproject.toml: give --project too"
    return None
