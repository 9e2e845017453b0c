"""One rule for what a registry member becomes (issue 35, Design): the same registry type gets the
same member declarations in a generated package's ``.pyi`` face and in ``--stubs-for``'s stubs.

The package is the committed one for ``libtvm_ffi_testing.so`` (test_regeneration.py checks it is
what the generator writes); the stubs are ``--stubs-for`` over a fixture package that loads the
same library and registers a class, with an empty body, for some of its types: an unnamed
``__ffi_init__`` that matches the fields (``TestIntPair``), auto-inits with defaults, keyword-only
and inherited fields, read-only and writable fields, fields written wider than read
(``TestObjectDerived``), methods with and without parameter names. For each class both must
declare the same members, each field with the same read type, write type and read-only-ness,
each method and constructor with the same parameter names, kinds, types and defaults.

Compared modulo what really differs between the two outputs: how a class is spelled (the
package's ``Map``, the stubs' ``_tvm_ffi.Map``: module qualifiers are dropped), the package's
own additions (``replace``, ``__replace__``, ``__match_args__``, docstrings), a default's value
(a stub writes every default ``...``, ``stubs/fill_annotations.py``), and what an argument
accepts: the package's runtime takes any ``SupportsIndex``/``SupportsFloat`` for an ``int`` or
``float`` parameter, ``tvm_ffi`` an ``Integral``/``Real`` (``int``/``float`` in a stub).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import TESTING_LIB
from stubs_for_run import stubs_for_package

pytestmark = pytest.mark.slow  # a --stubs-for run, with its mypy --strict self-check

ROOT = Path(__file__).resolve().parents[2]
FACE = ROOT / "generated" / "tvmffi_testing" / "testing" / "__init__.pyi"

#: The registry types the fixture package registers classes for, by their class names.
CLASSES = [
    "TestIntPair",
    "TestCompare",
    "TestCxxAutoInit",
    "TestCxxAutoInitParent",
    "TestCxxAutoInitChild",
    "TestCxxKwOnly",
    "TestObjectBase",
    "TestObjectDerived",
    "SchemaAllTypes",
]

#: Members the package's classes have and a registry type does not (its runtime adds them).
PACKAGE_ONLY = {"replace", "__replace__", "__match_args__"}


def _package() -> dict[str, str]:
    classes = "\n\n".join(
        f'@tvm_ffi.register_object("testing.{name}")\nclass {name}({_base(name)}):\n    pass\n' for name in CLASSES
    )
    head = "import ctypes\n\nimport tvm_ffi\n\n_LIB = ctypes.CDLL(@LIB@, ctypes.RTLD_GLOBAL)\n\n\n"
    return {"__init__.py": head + classes}


def _base(name: str) -> str:
    return {"TestObjectDerived": "TestObjectBase", "TestCxxAutoInitChild": "TestCxxAutoInitParent"}.get(
        name, "tvm_ffi.Object"
    )


@dataclass(frozen=True)
class Member:
    """One declared member, as a checker reads it."""

    kind: str  # "field" or "def"
    read: str = ""  # a field's read type
    write: str | None = None  # a field's write type; None: read-only
    params: tuple[tuple[str, str, str, str], ...] = ()  # a def's (name, kind, type, default), no self
    ret: str = ""


_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*\.")
_ARG_PROTOCOLS = {"SupportsIndex": "int", "SupportsFloat": "float"}
#: The runtime classes the two runtimes name differently (``tvm_ffi.dtype``, ``tvmffi_runtime.DataType``).
_RUNTIME_NAMES = {"dtype": "DataType"}


def _type(node: ast.expr | None, arg: bool = False) -> str:
    text = _QUALIFIER.sub("", ast.unparse(node)) if node is not None else ""
    text = re.sub(r"\b\w+\b", lambda m: _RUNTIME_NAMES.get(m.group(0), m.group(0)), text)
    if arg:
        text = re.sub(r"\b\w+\b", lambda m: _ARG_PROTOCOLS.get(m.group(0), m.group(0)), text)
    return text


def _params(fn: ast.FunctionDef) -> tuple[tuple[str, str, str, str], ...]:
    """A def's parameters as (name, kind, type, default), ``self`` left out."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [
        (p.arg, "posonly" if i < len(a.posonlyargs) else "normal", _type(p.annotation, True), _default(d))
        for i, (p, d) in enumerate(zip(positional, defaults, strict=True))
    ]
    out += [
        (p.arg, "kwonly", _type(p.annotation, True), _default(d))
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
    ]
    return tuple(p for p in out if p[0] != "self")


def _default(node: ast.expr | None) -> str:
    """Whether a parameter has a default (``...``), not its value: a stub writes every default
    ``...`` (``stubs/fill_annotations.py``)."""
    return "" if node is None else "..."


def _members(cls: ast.ClassDef) -> dict[str, Member]:
    """A class body's declarations: fields (attributes, ``Final``, properties with or without a
    setter) and defs."""
    out: dict[str, Member] = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            ann = node.annotation
            final = isinstance(ann, ast.Subscript) and _type(ann.value) == "Final"
            read = _type(ann.slice) if isinstance(ann, ast.Subscript) and final else _type(ann)
            out[node.target.id] = Member("field", read, None if final else read)
        elif isinstance(node, ast.FunctionDef):
            decorators = [ast.unparse(d) for d in node.decorator_list]
            if "property" in decorators:
                out[node.name] = Member("field", _type(node.returns), None)
            elif f"{node.name}.setter" in decorators:
                out[node.name] = Member("field", out[node.name].read, _type(node.args.args[1].annotation))
            else:
                out[node.name] = Member("def", params=_params(node), ret=_type(node.returns))
    return {name: m for name, m in out.items() if name not in PACKAGE_ONLY}


def _classes(text: str) -> dict[str, dict[str, Member]]:
    tree = ast.parse(text)
    return {node.name: _members(node) for node in tree.body if isinstance(node, ast.ClassDef)}


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Member]]:
    _, out = stubs_for_package(tmp_path_factory.mktemp("one_rule"), "pairs", _package(), TESTING_LIB)
    return _classes((out / "pairs-stubs" / "__init__.pyi").read_text())


@pytest.mark.parametrize("name", CLASSES)
def test_a_registry_type_is_declared_alike_in_the_face_and_the_stubs(
    name: str, stubs: dict[str, dict[str, Member]]
) -> None:
    face = _classes(FACE.read_text())[name]
    assert face, f"{name}: no members in the face"
    assert stubs[name] == face


def test_the_comparison_sees_what_the_rule_decides(stubs: dict[str, dict[str, Member]]) -> None:
    """The members compared above hold the facts the rule decides (so equal is not empty)."""
    pair, derived = stubs["TestIntPair"], stubs["TestObjectDerived"]
    assert pair["a"] == Member("field", "int", None)  # read-only: Final
    assert pair["__init__"].params == (("a", "posonly", "int", ""), ("b", "posonly", "int", ""))  # as the fields
    assert derived["v_array"] == Member("field", "Array[Any]", "Sequence[Any]")  # written wider than read
    assert stubs["TestObjectBase"]["v_i64"] == Member("field", "int", "int")
    assert stubs["SchemaAllTypes"]["__init__"].params == (("_never", "posonly", "NoReturn", ""),)  # not constructible
    assert stubs["TestObjectBase"]["__init__"].params[0] == ("v_i64", "normal", "int", "...")  # a default
