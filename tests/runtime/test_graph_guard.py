"""Reference cycles and too deep graphs given to the routines that recurse on the native stack
(structural equal / hash / key / mismatch, JSON and pickle, the structural engines) raise a
clear error naming the path, type and field, instead of ending the process with SIGSEGV; deep
copy and repr, which libtvm_ffi runs with its own stack, keep working on cycles.

Every graph is built and used in a child interpreter, once per runtime path, so a regression to
a crash fails the test instead of killing pytest. Fixture: tests/fixtures/cycles.cc.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, build_shared

FIXTURE = ROOT / "tests" / "fixtures" / "cycles.cc"
PATHS = pytest.mark.parametrize("pure", [False, True], ids=["compiled", "ctypes"])

#: The APIs that recurse natively; each runs in the child as ``name: expression``.
GUARDED = {
    "structural_hash": "rt.structural_hash(g)",
    "structural_equal": "rt.structural_equal(g, g)",
    "get_first_structural_mismatch": "rt.get_first_structural_mismatch(g, g)",
    "StructuralKey": "rt.StructuralKey(g)",
    "pickle": "pickle.dumps(g)",
    "to_json_graph": "rt.copying.to_json_graph(g)",
    "structural_walk": "S.structural_walk(g, lambda x: None)",
    "structural_visit": "S.structural_visit(g, lambda x: None)",
    "structural_map": "S.structural_map(g, lambda x: x)",
    "structural_mutate": "S.structural_mutate(g, lambda x: S.UNCHANGED)",
}

BUILD = {
    "self": "g = node(); set_field(g, 'parent', g)",
    "two": "g = node(); h = node(); set_field(g, 'parent', h); set_field(h, 'parent', g)",
    "array": "g = node(); set_field(g, 'items', rt.Array([1, 'x', g]))",
    "map": "g = node(); set_field(g, 'attrs', rt.Map({'k': g}))",
    "dense_map": "g = node(); set_field(g, 'attrs', rt.Map({**{f'a{i}': i for i in range(20)}, 'k': g}))",
    "list": "g = rt.List([1]); g.append(rt.Dict({'d': g}))",
    "deep": "g = rt.get_global_func('cyc.chain')(100_000)",
}

CHILD = """
import copy, json, os, pickle, sys
import tvmffi_runtime as rt
import tvmffi_runtime.structural as S
from tvmffi_runtime.reflection import get_field, set_field
rt.load_library({lib!r})
assert rt._backend.accelerated() is {accelerated}
node = lambda: rt.get_global_func('cyc.chain')(1)
{build}
for name, expr in {calls!r}.items():
    try:
        value = eval(expr)
        out = ["ok", type(value).__name__, repr(value)[:200]]
    except Exception as exc:
        out = ["raised", type(exc).__name__, str(exc)]
    print(json.dumps([name, out]), flush=True)
{after}
os._exit(0)  # skip freeing the graph (a cycle is never freed anyway)
"""


@pytest.fixture(scope="module")
def lib(have_gxx: bool) -> Path:
    return build_shared("cycles", FIXTURE.read_text())


def run_child(lib: Path, pure: bool, build: str, calls: dict[str, str], after: str = "") -> dict[str, list[str]]:
    """Results by API name of ``calls`` on the graph ``build`` makes, in a child interpreter."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "runtime")}
    env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    code = CHILD.format(lib=str(lib), accelerated=not pure, build=build, calls=calls, after=textwrap.dedent(after))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    results = dict(json.loads(line) for line in proc.stdout.splitlines() if line.startswith("["))
    assert proc.returncode == 0, f"child died (rc {proc.returncode}) after {list(results)}:\n{proc.stderr[-2000:]}"
    return results


CYCLES = {
    "self": "cyc.Node.parent → cyc.Node (the same object again)",
    "two": "cyc.Node.parent → cyc.Node.parent → cyc.Node (the same object again)",
    "array": "cyc.Node.items → Array[2] → cyc.Node (the same object again)",
    "map": "cyc.Node.attrs → Map['k'] → cyc.Node (the same object again)",
    "dense_map": "cyc.Node.attrs → Map['k'] → cyc.Node (the same object again)",
    "list": "List[1] → Dict['d'] → List (the same object again)",
}


@PATHS
@pytest.mark.parametrize("shape", list(CYCLES))
def test_a_cycle_is_refused_by_every_native_recursion_naming_the_path(lib: Path, pure: bool, shape: str) -> None:
    results = run_child(lib, pure, BUILD[shape], GUARDED)
    assert set(results) == set(GUARDED)
    root = "ffi.List" if shape == "list" else "cyc.Node"
    for name, (status, kind, message) in results.items():
        assert (status, kind) == ("raised", "ReferenceCycleError"), (name, message)
        what = f"pickle of {root}" if name == "pickle" else name
        assert message.startswith(f"{what}: the object graph has a reference cycle: {CYCLES[shape]}"), (name, message)


@PATHS
def test_a_graph_deeper_than_the_bound_is_refused_naming_the_chain(lib: Path, pure: bool) -> None:
    results = run_child(lib, pure, BUILD["deep"], GUARDED)
    assert set(results) == set(GUARDED)
    for name, (status, kind, message) in results.items():
        assert (status, kind) == ("raised", "GraphTooDeepError"), (name, message)
        assert (
            "nests deeper than 1000 levels"
            " (through cyc.Node.parent → cyc.Node.parent → cyc.Node.parent → ... (994 more)" in message
        )
        assert "would overflow the C stack" in message and "set_max_graph_depth" in message


@PATHS
def test_the_errors_are_value_and_recursion_errors_with_the_path(lib: Path, pure: bool) -> None:
    calls = {
        "cycle": "(lambda e: [isinstance(e, ValueError), e.path])(catch(lambda: rt.structural_hash(g)))",
        "deep": "(lambda e: [isinstance(e, RecursionError), e.limit, len(e.path), e.path[0]])"
        "(catch(lambda: rt.structural_hash(d)))",
        # objects inside Python lists / dicts given as arguments are checked too
        "in_list": "str(catch(lambda: rt.structural_hash([1, {'k': (g,)}])))",
    }
    build = (
        BUILD["two"]
        + "\nd = rt.get_global_func('cyc.chain')(5000)"
        + "\ndef catch(f):\n    try:\n        f()\n    except Exception as exc:\n        return exc"
    )
    results = run_child(lib, pure, build, calls)
    assert results["cycle"][2] == "[True, [('cyc.Node', 'parent'), ('cyc.Node', 'parent')]]"
    assert results["deep"][2] == "[True, 1000, 1000, ('cyc.Node', 'parent')]"
    assert results["in_list"][2].startswith("'structural_hash: the object graph has a reference cycle: cyc.Node.parent")


@PATHS
def test_deep_copy_and_repr_keep_cycles_and_a_deep_repr_falls_back(lib: Path, pure: bool) -> None:
    calls = {
        "deepcopy": "(lambda c: [c.same_as(g), get_field(c, 'parent').same_as(c)])(copy.deepcopy(g))",
        "repr": "repr(g)",
        "deep_copy": "get_field(copy.deepcopy(d), 'name')",
        "deep_repr": "repr(d).startswith('<cyc.Node at 0x')",
    }
    build = BUILD["self"] + "\nd = rt.get_global_func('cyc.chain')(100_000)"
    results = run_child(lib, pure, build, calls)
    assert results["deepcopy"][2] == "[False, True]"  # a new object whose parent is itself
    assert results["repr"][2] == repr('cyc.Node(name="n0", parent=..., items=(), attrs={}, weight=None, owner=None)')
    assert results["deep_copy"][2] == "'n99999'"
    assert results["deep_repr"][2] == "True"  # refused by the bound: Object.__repr__'s fallback


@PATHS
def test_acyclic_graphs_still_work_shared_nodes_and_ignored_back_links_included(lib: Path, pure: bool) -> None:
    build = """
shared = node()
g = node()
set_field(g, 'items', rt.Array([shared, shared, rt.Map({'a': shared, 'b': [shared]})]))
set_field(g, 'weight', 7)
set_field(shared, 'owner', g)  # a back link structural eq / hash ignore: no cycle for them
chain = rt.get_global_func('cyc.chain')(900)
loop = node(); set_field(loop, 'parent', loop)
"""
    calls = {
        "hash_equal": "rt.structural_hash(g) == rt.structural_hash(g) and rt.structural_equal(g, g)",
        "key": "type(rt.StructuralKey(g)).__name__",
        "pickle_refused": "catch()",
        "chain_hash": "rt.structural_hash(chain) == rt.structural_hash(copy.deepcopy(chain))",
        "chain_pickle": "get_field(pickle.loads(pickle.dumps(chain)), 'name')",
        "chain_walk": "S.structural_walk(chain, lambda x: None)",
        # one side free of cycles bounds the comparison's depth: no refusal
        "equal_one_cyclic": "[rt.structural_equal(loop, node()), rt.structural_equal(node(), loop)]",
        "mismatch_one_cyclic": "rt.get_first_structural_mismatch(loop, node())[0]",
    }
    build += "\ndef catch():\n    try:\n        pickle.dumps(g)\n    except ValueError as exc:\n        return str(exc)"
    results = run_child(lib, pure, build, calls)
    assert results["hash_equal"][2] == "True"
    assert results["key"][2] == "'StructuralKey'"
    assert (
        "cyc.Node.items → Array[0] → cyc.Node.owner → cyc.Node (the same object again)" in results["pickle_refused"][2]
    )
    assert results["chain_hash"][2] == "True"
    assert results["chain_pickle"][2] == "'n899'"
    assert results["chain_walk"][0] == "ok"
    assert results["equal_one_cyclic"][2] == "[False, False]"
    assert results["mismatch_one_cyclic"][2] == "<root>.parent"


@PATHS
def test_the_bound_can_be_set_and_is_checked(lib: Path, pure: bool) -> None:
    build = "chain = rt.get_global_func('cyc.chain')(20)"
    calls = {
        "previous": "rt.set_max_graph_depth(10)",
        "refused": "catch(lambda: rt.structural_hash(chain))",
        "restored": "[rt.set_max_graph_depth(1000), rt.max_graph_depth(), type(rt.structural_hash(chain)).__name__]",
        "bad": "catch(lambda: rt.set_max_graph_depth(0))",
    }
    build += (
        "\ndef catch(f):\n    try:\n        f()\n    except Exception as exc:\n"
        "        return f'{type(exc).__name__}: {exc}'"
    )
    results = run_child(lib, pure, build, calls)
    assert results["previous"][2] == "1000"
    assert results["refused"][2].startswith(
        "'GraphTooDeepError: structural_hash: the object graph nests deeper than 10 levels"
    )
    assert results["restored"][2] == "[10, 1000, 'int']"
    assert results["bad"][2] == "'ValueError: set_max_graph_depth: expected a positive int, got 0'"


@PATHS
def test_the_check_releases_what_it_reads(lib: Path, pure: bool) -> None:
    build = """
leaf = node()
g = node()
set_field(g, 'items', rt.Array([leaf]))
set_field(g, 'attrs', rt.Map({'k': leaf, **{f'k{i}': node() for i in range(20)}}))  # dense layout
set_field(g, 'parent', leaf)
set_field(g, 'weight', 3)
from tvmffi_runtime._graph_guard import check_graph
before = [rt._object._ref_counts(o._h) for o in (g, leaf)]
for _ in range(100):
    check_graph(g, 'x')
    check_graph(g, 'x', structural=True)
after = [rt._object._ref_counts(o._h) for o in (g, leaf)]
"""
    results = run_child(lib, pure, build, {"same": "before == after"})
    assert results["same"][2] == "True"


@PATHS
def test_callbacks_recursing_past_pythons_limit_raise_recursion_error_saying_so(lib: Path, pure: bool) -> None:
    """A visit / mutate callback that recurses through the engine (``ctx.default_visit``) on a
    chain within the depth bound runs out of Python's recursion limit first; the error that
    comes back says so (not "error while converting a Python exception")."""
    build = """
chain = rt.get_global_func('cyc.chain')(900)
Node = rt.class_for_index(rt.type_key_to_index('cyc.Node'))
def visit(x: Node, ctx: S.VisitContext) -> None:
    ctx.default_visit(x)
def mutate(x: Node, ctx: S.MutateContext) -> object:
    return ctx.default_mutate(x)
def catch(f):
    try:
        f()
    except Exception as exc:
        return f'{type(exc).__name__}: {exc}'
"""
    calls = {
        "visit": "catch(lambda: S.structural_visit(chain, S.on(Node, visit)))",
        "mutate": "catch(lambda: S.structural_mutate(chain, S.on(Node, mutate)))",
        "higher_limit": "(sys.setrecursionlimit(20000), S.structural_visit(chain, S.on(Node, visit)))[1]",
    }
    results = run_child(lib, pure, build, calls)
    expected = (
        "'RecursionError: maximum recursion depth exceeded in a Python callback called from native code:"
        " the callbacks recurse (through the traversal) deeper than sys.getrecursionlimit() allows'"
    )
    assert results["visit"][2] == expected
    assert results["mutate"][2] == expected
    assert results["higher_limit"][:2] == ["ok", "NoneType"]  # within the bound the C stack holds


@pytest.mark.parametrize(
    "pure",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skip(
                reason="known gap: on the ctypes path a callback can be entered with no stack left; ctypes then drops"
                " its RecursionError and native code reads an undefined return code (wrong result or crash)"
            ),
        ),
    ],
    ids=["compiled", "ctypes"],
)
def test_callbacks_out_of_stack_report_the_same_error_whatever_depth_the_call_starts_at(lib: Path, pure: bool) -> None:
    """Where the limit hits (in the callback, in a ctypes call whose ArgumentError hides the
    RecursionError, or while an error is read or written at the boundary) depends on how deep the
    call starts; the error that comes back must not."""
    build = """
chain = rt.get_global_func('cyc.chain')(900)
Node = rt.class_for_index(rt.type_key_to_index('cyc.Node'))
def visit(x: Node, ctx: S.VisitContext) -> None:
    ctx.default_visit(x)
def catch(f):
    try:
        f()
    except Exception as exc:
        return f'{type(exc).__name__}: {exc}'
def at_depth(k, f):
    return at_depth(k - 1, f) if k else f()
def outcome(k):
    return catch(lambda: at_depth(k, lambda: S.structural_visit(chain, S.on(Node, visit))))
EXPECTED = 'RecursionError: ' + rt._errors.RECURSION_IN_CALLBACK[1].decode()
"""
    calls = {"others": "sorted({outcome(k) for k in range(12)} - {EXPECTED})"}  # 12 depths: more than a level's frames
    assert run_child(lib, pure, build, calls)["others"] == ["ok", "list", "[]"]


@PATHS
def test_a_list_or_dict_holding_itself_shows_as_dots_in_its_repr(lib: Path, pure: bool) -> None:
    build = """
lst = rt.List([1]); lst.append(lst)
dct = rt.Dict({'a': 1}); dct['self'] = dct
shared = rt.Array([1, 2]); twice = rt.List([shared, shared])
"""
    calls = {"list": "repr(lst)", "dict": "repr(dct)", "shared": "repr(twice)"}
    results = run_child(lib, pure, build, calls)
    assert results["list"][2] == repr("List([1, List(...)])")
    assert results["dict"][2] == repr("Dict({'a': 1, 'self': Dict(...)})")
    assert results["shared"][2] == repr("List([Array([1, 2]), Array([1, 2])])")  # repeated, not nested: shown


@PATHS
def test_structural_keys_whose_keys_became_cycles_are_refused_on_comparison(lib: Path, pure: bool) -> None:
    build = """
a = node(); b = node()
ka, kb = rt.StructuralKey(a), rt.StructuralKey(b)
before = ka == kb
set_field(a, 'parent', a); set_field(b, 'parent', b)
def catch(f):
    try:
        f()
    except Exception as exc:
        return f'{type(exc).__name__}: {exc}'
"""
    results = run_child(lib, pure, build, {"before": "before", "after": "catch(lambda: ka == kb)"})
    assert results["before"][2] == "True"
    assert results["after"][2].startswith(
        "'ReferenceCycleError: StructuralKey ==: the object graph has a reference cycle: cyc.Node.parent → cyc.Node"
    )
