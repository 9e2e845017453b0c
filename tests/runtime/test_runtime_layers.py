"""The runtime's modules depend one way only: no import cycle, counting imports inside functions
and imports by name (``importlib.import_module``, ``__import__``, and the compiled backend's C).

A lower layer never imports a higher one: what it calls above it is handed to it at one place,
``_wiring`` (the backend's helpers in ``backend.init``, ``Object``'s services, the converters'
hooks, ...), which only the package ``__init__`` imports.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT, accel_source

PACKAGE = ROOT / "runtime" / "tvmffi_runtime"


def _module_name(path: Path) -> str:
    """``_call``, or ``structural._hooks`` for a module of the ``structural`` subpackage."""
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)


def _named_module(call: ast.Call, pkg: list[str]) -> str | None:
    """The package module an ``importlib.import_module(...)`` / ``__import__(...)`` call names, as
    ``_call`` (a relative name resolved against ``pkg``); a name not written out is an error
    (the test could not see the edge)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
        return "<computed>"
    target: str = arg.value
    if target.startswith("."):
        depth = len(target) - len(target.lstrip("."))
        base = pkg[: len(pkg) - (depth - 1)] if depth > 1 else pkg
        return ".".join([*base, target.lstrip(".")])
    return target.split(".", 1)[1] if target.startswith("tvmffi_runtime.") else None


#: The modules that import a module computed at run time, and what they import so: never one
#: of the runtime's own (a generated package's modules, or an optional dependency).
COMPUTED_IMPORTS = {"_functions", "_packages", "records", "tensor"}


def _imports(path: Path) -> set[str]:
    """Package modules ``path`` imports anywhere (top level, functions, TYPE_CHECKING blocks),
    by statement or by name."""
    me = _module_name(path)
    pkg = list(path.relative_to(PACKAGE).parent.parts)  # the (sub)package of a level-1 import
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            if node.module:
                found.add(".".join([*base, node.module]))
            else:
                found.update(".".join([*base, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tvmffi_runtime."):
            found.add((node.module or "").split(".", 1)[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".", 1)[1] for a in node.names if a.name.startswith("tvmffi_runtime."))
        elif isinstance(node, ast.Call) and (named := _named_module(node, pkg)) is not None:
            assert named != "<computed>" or me in COMPUTED_IMPORTS, f"{me} imports a module computed at run time"
            found.add(named)
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    found = {m if m in modules else m.rsplit(".", 1)[0] for m in found}  # from .x import name
    return {m for m in found if m in modules and m != me}


def test_imports_by_name_are_seen() -> None:
    """The edges the graph below is built from include an import made by ``importlib``."""
    tree = ast.parse("import importlib\nimportlib.import_module('tvmffi_runtime._wiring')\n__import__('.x')\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [_named_module(c, ["structural"]) for c in calls] == ["_wiring", "structural.x"]


def test_the_compiled_backend_imports_no_runtime_module() -> None:
    """``_accel.c`` is handed its helpers by ``init``; it imports none of the runtime's modules."""
    source = accel_source()
    assert not re.search(r"PyImport_Import\w*\(", source)


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py") if _module_name(p)}


def test_no_import_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for dep in sorted(graph.get(m, ())):
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep) :], dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_core_layers_import_only_lower_layers() -> None:
    # the pure backend sits as low as the compiled one: what it calls above it is handed to it
    order = ["_platform", "_library_check", "_field_kinds", "_api_level", "_features", "_lib", "_native_traceback",
             "_errors", "_values", "_graph_layout", "_container_functions",
             "_pure.objects", "_pure.calls", "_pure.lazy_function", "_pure.fields", "_pure.callbacks", "_pure.graph",
             "_pure.dlpack", "_pure.containers", "_pure",
             "_backend", "_object", "_convert", "_call", "_callback", "_env"]  # fmt: skip
    graph = _graph()
    for i, m in enumerate(order):
        higher = graph[m] & set(order[i:])
        assert not higher, f"{m} imports the higher layer(s) {sorted(higher)}"
        assert graph[m] <= set(order[:i]) | {"_accel"}, f"{m} imports {sorted(graph[m] - set(order))}"


def test_the_package_wires_the_runtime_first_in_one_place() -> None:
    """Only the package ``__init__`` imports ``_wiring`` (which runs ``backend.init`` and hands
    every lower layer its helpers) and ``_env`` (the signal and GIL hooks), before anything else;
    no other module calls a ``set_*`` hook of another layer."""
    graph = _graph()
    assert not {m for m, deps in graph.items() if deps & {"_wiring", "_env"}}  # (the graph leaves __init__ out)
    imported: list[str] = []
    for node in ast.parse((PACKAGE / "__init__.py").read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            imported += [node.module] if node.module else [alias.name for alias in node.names]
    assert set(imported[: imported.index("_wiring")]) <= {"_env", "_lib"}, imported  # (_lib: the ABI alone)
    hooks = {"set_object_service", "set_container_builder", "set_dlpack_importer", "set_typed_adapter",
             "set_walk_result", "set_unchanged", "register_packer"}  # fmt: skip
    calling = set()
    for p in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                if name in hooks:
                    calling.add(_module_name(p))
    assert calling == {"_wiring"}
    assert {_module_name(p) for p in PACKAGE.rglob("*.py") if "backend.init(" in p.read_text()} == {"_wiring"}


def test_the_backend_is_chosen_in_one_place() -> None:
    """Only ``_backend`` imports a backend as a whole (``_accel``, or the ``_pure`` package);
    every other layer calls ``_backend.backend``. The tables both backends share are layers of
    their own below them (``_field_kinds``, ``_graph_layout``), so no layer above reads the pure
    backend's parts, and none but ``_backend`` asks which backend runs."""
    graph = _graph()
    source = {p: p.read_text() for p in PACKAGE.rglob("*.py")}
    compiled = re.compile(r"from \.+ import _accel\b|from \.+_accel import|tvmffi_runtime\._accel\b")
    assert {_module_name(p) for p, text in source.items() if compiled.search(text)} == {"_backend"}
    assert {m for m, deps in graph.items() if "_pure" in deps} == {"_backend"}
    parts = {m for m, deps in graph.items() if not m.startswith("_pure") and any(d.startswith("_pure.") for d in deps)}
    assert parts == set()
    asking = sorted(_module_name(p) for p, text in source.items() if "accelerated()" in text)
    assert asking == ["_backend"]


def test_structural_engines_go_only_through_the_backend() -> None:
    """The structural engines make their callbacks with ``backend.function_create`` in the raw
    and hook modes on either backend: no ``_pure`` part, no question which backend runs."""
    graph = _graph()
    assert not any(d.startswith("_pure") for d in graph["structural._native"])
    assert "accelerated()" not in (PACKAGE / "structural" / "_native.py").read_text()


def test_callback_modes_match_the_compiled_backend() -> None:
    """The callback modes are defined once in Python (``_values.CallbackMode``, which the pure
    backend runs by) and once in ``_accel.c``; this keeps the two numbering the same."""
    from tvmffi_runtime._values import CallbackMode

    enum = re.search(r"enum \{ (CB_PLAIN[^}]*)\}", accel_source())
    assert enum is not None
    c_modes = {name.strip(): int(value) for name, value in (m.split("=") for m in enum.group(1).split(","))}
    py_modes = {
        "CB_PLAIN": CallbackMode.PLAIN,
        "CB_PACKED": CallbackMode.PACKED,
        "CB_WALK": CallbackMode.WALK,
        "CB_RAW": CallbackMode.RAW,
        "CB_RAW_WALK": CallbackMode.RAW_WALK,
        "CB_HOOK": CallbackMode.HOOK,
    }
    assert c_modes == py_modes


def test_one_table_of_map_functions() -> None:
    """The functions a Map or Dict is read with are named once (``_container_functions``): both
    backends are handed that table at init and look the functions up by it, so neither the C
    nor any Python module spells one of the names itself."""
    from tvmffi_runtime import _wiring
    from tvmffi_runtime._container_functions import MAP_FUNCTIONS

    assert _wiring.BACKEND_HELPERS["map_functions"] is MAP_FUNCTIONS
    names = {name for row in MAP_FUNCTIONS.values() for name in row}
    assert len(names) == 6
    spelled = {_module_name(p) for p in PACKAGE.rglob("*.py") if any(f'"{name}"' in p.read_text() for name in names)}
    assert spelled == {"_container_functions"}
    assert not any(name in accel_source() for name in names)


def test_one_table_of_field_kinds() -> None:
    """``_field_kinds`` is the one table of field layouts: the compiled backend includes the
    header ``setup.py`` writes from it and defines no kind of its own; the pure backend's
    descriptors and the generator's layout rules are its tables."""
    from tvmffi_gen.model import class_members
    from tvmffi_gen.registry.runtime_files import field_kinds
    from tvmffi_runtime import _field_kinds, _fields

    fields_h = (PACKAGE / "_accel_parts" / "fields.h").read_text()
    assert '#include "field_kinds.h"' in fields_h
    assert not re.search(r"enum \{ F_|field_kinds\[\] =|k != F_", fields_h)
    assert _field_kinds.c_header().splitlines()[2:] == [
        "enum { F_I64, F_I32, F_F64, F_F32, F_BOOL, F_OBJECT, F_ANY };",
        'static const char* field_kinds[] = {"i64", "i32", "f64", "f32", "bool", "object", "any", NULL};',
        "static const char field_kind_in_place[] = {1, 0, 1, 0, 1, 0, 0};",
    ]
    header = PACKAGE / "_accel_parts" / "field_kinds.h"
    if header.is_file():  # written by every build of the compiled backend
        assert header.read_text() == _field_kinds.c_header()
    assert _fields.FIELD_KINDS is _field_kinds.FIELD_KINDS
    table = field_kinds()  # the same file, loaded without the runtime
    assert class_members.POD_KINDS is table.POD_LAYOUTS and class_members.IN_PLACE_KINDS is table.IN_PLACE_FIELD_KINDS
    assert (table.FIELD_KINDS, table.POD_LAYOUTS) == (_field_kinds.FIELD_KINDS, _field_kinds.POD_LAYOUTS)


def test_every_subpackage_is_in_the_distribution() -> None:
    """``runtime/pyproject.toml`` names the packages a wheel carries: each folder of the runtime
    with an ``__init__.py`` (``_pure``, ``structural``) must be listed, or an installed runtime
    fails at import."""
    import tomllib

    listed = tomllib.loads((ROOT / "runtime" / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {".".join(("tvmffi_runtime", *p.parent.relative_to(PACKAGE).parts)) for p in PACKAGE.rglob("__init__.py")}
    assert set(listed) == found
