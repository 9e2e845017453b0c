"""The generator's options a build may give, derived from their declarations in ``cli.options``.

An option declared with a ``build_key`` is given by that one name everywhere a build says what to
generate: the key in ``[tool.tvmffi-gen]`` (``prefix = ["ns"]``), the keyword in capitals of
``tvmffi_gen_add_package`` (``PREFIX ns``), and the option of ``python -m
tvmffi_gen.integration.step`` (``--prefix ns``, underscores as dashes). Each becomes the
generator's own command line (``generator_arguments``), which the step both passes on and keys its
stamp on.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from ..cli.options import Option, add_argument, declared

__all__ = [
    "BuildOption",
    "add_step_arguments",
    "build_keys",
    "build_options",
    "cmake_keywords",
    "generator_arguments",
    "not_read_by",
]

#: How a build gives the option: a switch, one value, or a list of values.
Shape = Literal["switch", "value", "list"]


@dataclass(frozen=True)
class BuildOption:
    """A generator option a build may give: its field in ``Options``, declaration and key."""

    dest: str
    declaration: Option
    key: str

    @property
    def shape(self) -> Shape:
        action = self.declaration.parse.get("action")
        return "switch" if action == "store_true" else "list" if action == "append" else "value"

    @property
    def step_flag(self) -> str:
        """Its option of ``python -m tvmffi_gen.integration.step`` (``--prefix``)."""
        return "--" + self.key.replace("_", "-")

    @property
    def cmake_keyword(self) -> str:
        return self.key.upper()

    @property
    def flag(self) -> str:
        """The generator's spelling of it (its longest: ``--prefix``)."""
        return max(self.declaration.flags, key=len)


def build_options() -> Iterator[BuildOption]:
    """The options a build may give, in ``--help``'s order."""
    for dest, decl in declared():
        if decl.build_key is not None:
            yield BuildOption(dest, decl, decl.build_key)


def build_keys() -> list[str]:
    """The keys of the build options, in ``--help``'s order."""
    return [build.key for build in build_options()]


def _given(value: object) -> bool:
    return value is not None and value is not False and value != [] and value != ()


def not_read_by(mode: Literal["package", "stubs"], values: Mapping[str, object]) -> list[BuildOption]:
    """The options given in ``values`` (by key) that a run of ``mode`` does not read (``prefix``
    in stubs mode)."""
    return [b for b in build_options() if _given(values.get(b.key)) and mode not in b.declaration.runs]


def generator_arguments(values: Mapping[str, object], where: str) -> tuple[str, ...]:
    """The generator's command line for the build options ``values`` (by key; absent: not
    given); ValueError naming ``where`` and the key whose value has the wrong type."""
    args: list[str] = []
    for build in build_options():
        value = values.get(build.key)
        if not _given(value):
            continue
        if build.shape == "switch":
            if value is not True:
                raise ValueError(f"{where}: {build.key} = {value!r}: give true or false")
            args.append(build.flag)
            continue
        items: object = [value] if isinstance(value, str) or build.shape == "value" else value
        strings = (
            [v for v in cast("list[object]", items) if isinstance(v, str)] if isinstance(items, (list, tuple)) else []
        )
        if not isinstance(items, (list, tuple)) or len(strings) != len(cast("list[object]", items)):
            wanted = "a string" if build.shape == "value" else "a string or a list of strings"
            raise ValueError(f"{where}: {build.key} = {value!r}: give {wanted}")
        for item in strings:
            args += [build.flag, item]
    return tuple(args)


def add_step_arguments(p: argparse.ArgumentParser) -> None:
    """The build options as options of the step's own parser (``--prefix NS``)."""
    for build in build_options():
        decl = build.declaration
        add_argument(p, build.dest, Option((build.step_flag,), decl.help, decl.runs, decl.parse))


def cmake_keywords() -> str:
    """The keyword lists ``tvmffi_gen_add_package`` parses, as the CMake package spells them."""
    shapes: dict[Shape, list[str]] = {"switch": [], "value": [], "list": []}
    for build in build_options():
        shapes[build.shape].append(build.cmake_keyword)
    lines = [f'set(_tvmffi_gen_{shape}_keywords "{";".join(words)}")' for shape, words in shapes.items()]
    return "\n".join(lines) + "\n"
