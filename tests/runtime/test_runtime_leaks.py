"""Leaks: long loops over every kind of traffic, each in its own interpreter, then in-process loops.

Every case runs in a child process (so pytest's own allocations do not blur the numbers): the
loop runs a warm-up, then ``gc.collect()``, then the measured iterations, then ``gc.collect()``
again; the child reports the RSS growth (``/proc/self/statm``), the ``testing.object_use_count``
of a sentinel object passed through every iteration, the number of live Python callbacks
(``_callback.live_callbacks()``), the number of gc-tracked Python objects, and how many iterations ran.
Every iteration also checks the values it gets back, so a loop that goes wrong fails loudly.

Payloads are deliberately large (1 KB strings and tensors, 1 KB error messages) so that keeping
even one of them per iteration grows RSS far beyond the 5 MB bound; the use-count and Python
object checks catch leaks of small objects that RSS alone could miss.

Iteration counts: 100 000 for calls, fields, containers (25 000 rounds of the four container
kinds), container reads (10 000 rounds of index, slice, membership, lookups with their misses and
iteration over all five kinds), callbacks, tensors and tensor views. Two cases run fewer, to keep the whole
suite under its time budget (measured on 2 cores):

- errors: 30 000 (10 000 per direction). Raising and catching costs 100-250 us per error (a
  native backtrace, an Error object and a Python traceback each time), so 100 000 would take
  ~15-25 s alone; with 1 KB messages, 30 000 leaked errors would still be ~30 MB.
- structural: 20 000 walk + map pairs over a 9-node tree. One pair costs ~130 us (every node
  visit is a Python callback), so 100 000 would take ~13 s; 20 000 pairs are 180 000 node visits
  and 60 000 new nodes; the sentinel use count catches a single leaked result tree.

Cases run two at a time (one per core) in a module fixture; each test waits for its own.

The in-process cases at the end (``test_no_leak_in_process``) make at least 100 000 native calls
each in the test process itself: RSS stays flat and reference counts come back to where they were.
``test_accel.test_runtime_suite_passes_on_pure_ctypes`` reruns those on pure ctypes.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _callback, _errors

from conftest import ROOT

pytestmark = pytest.mark.slow  # leak counts over many operations: see tests/README.md

RSS_LIMIT = 5 * 1024 * 1024
#: gc-tracked Python objects a loop may leave behind (caches, interned strings, free lists);
#: a per-iteration leak of even one object would be tens of thousands.
PY_OBJECTS_LIMIT = 2000

PREAMBLE = f"""
import gc, json, os, sys, time
sys.path[:0] = [{str(ROOT / "runtime")!r}, {str(ROOT / "generated")!r}, {str(ROOT / "tests")!r}]
import tvmffi_runtime as rt
from tvmffi_runtime import _callback, _errors
from tvmffi_testing import testing as T

PAGE = os.sysconf("SC_PAGE_SIZE")
echo = rt.get_global_func("testing.echo")
nop = rt.get_global_func("testing.nop")
apply = rt.get_global_func("testing.apply")
use_count = rt.get_global_func("testing.object_use_count")
raise_error = rt.get_global_func("testing.test_raise_error")
LONG = "leak-suite payload " * 54  # ~1 KB: a heap string every time it crosses
assert len(LONG) > 1000

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE

def measure(loop, n, warm, sentinel):
    assert loop(warm) == warm
    gc.collect()
    uc0, cb0 = use_count(sentinel), _callback.live_callbacks()
    objs0 = len(gc.get_objects())
    rss0 = rss()
    t0 = time.perf_counter()
    done = loop(n)
    seconds = time.perf_counter() - t0
    gc.collect()
    print("RESULT " + json.dumps({{
        "iterations": done,
        "seconds": seconds,
        "rss_growth": rss() - rss0,
        "use_count_before": uc0,
        "use_count_after": use_count(sentinel),
        "callbacks_before": cb0,
        "callbacks_after": _callback.live_callbacks(),
        "py_objects_growth": len(gc.get_objects()) - objs0,
        "py_errors": len(_errors._PY_ERRORS),
        "py_errors_limit": _errors._PY_ERRORS_LIMIT,
    }}))
"""

CASES: dict[str, tuple[int, str]] = {}

# --------------------------------------------------------------------------------------------
CASES["calls"] = (
    100_000,
    """
sentinel = T.TestIntPair(3, 4)

def loop(n):
    for i in range(n):
        assert echo(sentinel).same_as(sentinel)
        nop(sentinel, LONG, i, 2.5, None)
        assert T.add_one(i) == i + 1
        assert T.schema_id_string(LONG) == LONG
        assert T.TestIntPairSum(sentinel) == 7
        assert T.echo(i) == i
    return n
""",
)

# --------------------------------------------------------------------------------------------
CASES["fields"] = (
    100_000,
    """
sentinel = T.TestIntPair(3, 4)
strings = [LONG + "a", LONG + "b"]
sat = T.SchemaAllTypes.make_with(1, 2.0, "s")
auto = T.TestCxxAutoInitSimple(1, 2)
holder = T.TestDeepCopyEdges(LONG, sentinel)

def loop(n):
    for i in range(n):
        auto.x = i  # POD write in place, POD read from memory
        assert auto.x == i and auto.y == 2
        assert sentinel.a == 3 and sentinel.b == 4
        s = strings[i & 1]
        sat.v_string = s  # registry setter with a 1 KB string, direct read back
        assert sat.v_string == s
        sat.v_int = i
        assert sat.v_int == i
        if i % 4 == 0:
            sat.v_arr_int = [i, i + 1]
            assert list(sat.v_arr_int) == [i, i + 1]
        holder.v_obj = sentinel  # object field: setter and direct read
        assert holder.v_obj.same_as(sentinel)
        holder.v_any = s  # Any field holding a heap string
        assert holder.v_any == s
    return n
""",
)

# --------------------------------------------------------------------------------------------
CASES["containers"] = (
    100_000,
    """
sentinel = T.TestIntPair(3, 4)

def loop(n):
    rounds = n // 4
    for i in range(rounds):
        a = rt.Array([sentinel, LONG, i])
        got = list(a)
        assert got[0].same_as(sentinel) and got[1] == LONG and got[2] == i and len(a) == 3
        m = rt.Map({"s": sentinel, "l": LONG, "i": i})
        items = dict(m.items())
        assert items["s"].same_as(sentinel) and items["l"] == LONG and items["i"] == i
        lst = rt.List([sentinel, i])
        lst.append(LONG)
        got = list(lst)
        assert len(got) == 3 and got[0].same_as(sentinel) and got[2] == LONG
        d = rt.Dict({"s": sentinel})
        d["l"] = LONG
        assert sorted(d.keys()) == ["l", "s"] and d["s"].same_as(sentinel)
        assert any(v == LONG for v in d.values() if isinstance(v, str))
    return rounds * 4
""",
)

# --------------------------------------------------------------------------------------------
# the read side (index, slice, membership, lookups and their misses, iteration), each a C slot on
# the compiled path: every object read out gets its own reference, released with its wrapper
CASES["container_reads"] = (
    100_000,
    """
sentinel = T.TestIntPair(3, 4)
arr = rt.Array([sentinel, LONG, 7, rt.Array([sentinel])])
lst = rt.List([sentinel, LONG])
m = rt.Map({"s": sentinel, "l": LONG, sentinel: 1})
d = rt.Dict({"s": sentinel, "l": LONG})
shape = rt.Shape([2, 3, 4])
missing = "missing " + LONG

def loop(n):
    rounds = n // 10
    for i in range(rounds):
        assert arr[0].same_as(sentinel) and arr[-3] == LONG and len(arr[1:]) == 3 and arr[3][0].same_as(sentinel)
        assert sentinel in arr and LONG in arr and 8 not in arr and [sentinel] in arr and lst[1] == LONG
        assert m["s"].same_as(sentinel) and m[sentinel] == 1 and m.get(missing) is None and "l" in m
        assert missing not in m and [1] not in m and d["l"] == LONG and "s" in d
        try:
            m[missing]
        except KeyError:
            pass
        try:
            arr[10]
        except IndexError:
            pass
        assert len(list(m.items())) == 3 and len(list(m)) == 3 and LONG in list(m.values())
        assert len(list(d.items())) == 2 and shape[1] == 3 and tuple(shape) == (2, 3, 4) and shape[::2] == (2, 4)
        dims = range(2**40 + i, 2**40 + i + 64)  # ~2.5 KB of tuple and ints kept by the wrapper once read
        fresh = rt.Shape(dims)
        assert fresh[-1] == dims[-1] and list(fresh) == list(dims) and hash(fresh) == hash(tuple(dims))
    return rounds * 10
""",
)

# --------------------------------------------------------------------------------------------
CASES["callbacks"] = (
    100_000,
    """
sentinel = T.TestIntPair(3, 4)
identity = rt.Function.from_callable(lambda x: x)

def pack(x, s):
    assert x.same_as(sentinel)
    return [x, s]  # a container built for the result

packer = rt.Function.from_callable(pack)

def loop(n):
    for i in range(n):
        assert apply(identity, sentinel).same_as(sentinel)
        r = apply(packer, sentinel, LONG)
        assert r[0].same_as(sentinel) and r[1] == LONG
        if i % 2 == 0:  # a new Function from a new closure, released after the call
            assert apply(lambda x, s: len(s) + x.a, sentinel, LONG) == len(LONG) + 3
    return n
""",
)

# --------------------------------------------------------------------------------------------
CASES["errors"] = (
    30_000,
    """
sentinel = T.TestIntPair(3, 4)

class Boom(Exception):
    pass

def python_fails(obj, msg):  # Python -> native -> Python
    assert obj.same_as(sentinel)
    raise Boom(msg)

def native_fails(obj, msg):  # native -> Python callback -> native error -> Python
    raise_error("RuntimeError", msg)

fail_py = rt.Function.from_callable(python_fails)
fail_native = rt.Function.from_callable(native_fails)

def loop(n):
    for i in range(n):
        msg = LONG + str(i)
        kind = i % 3
        try:
            if kind == 0:
                raise_error("ValueError", msg)
            elif kind == 1:
                apply(fail_py, sentinel, msg)
            else:
                apply(fail_native, sentinel, msg)
        except ValueError as exc:
            assert kind == 0 and msg in str(exc), (kind, str(exc)[-40:])
        except Boom as exc:
            assert kind == 1 and exc.args == (msg,), kind
        except RuntimeError as exc:
            assert kind == 2 and msg in str(exc), kind
        else:
            raise AssertionError(f"iteration {i}: no error raised")
    return n
""",
)

# --------------------------------------------------------------------------------------------
CASES["tensors"] = (
    100_000,
    """
import numpy as np

sentinel = T.TestIntPair(3, 4)
arr = np.arange(256, dtype="float32")  # 1 KB
kept = echo(arr)
assert isinstance(kept, rt.Tensor)
kept_uc = use_count(kept)

def loop(n):
    for i in range(n):
        t = echo(arr)  # numpy -> DLPack -> Tensor -> back
        assert isinstance(t, rt.Tensor)
        back = np.from_dlpack(t)
        assert rt.Tensor.from_dlpack(back).shape == (256,)  # Tensor.from_dlpack's own wrapper
        j = i & 255
        assert back.shape == (256,) and back.dtype == np.float32 and back[j] == j
        if i % 4 == 0:
            r = echo([kept, sentinel, t])
            assert r[0].same_as(kept) and r[1].same_as(sentinel)
            assert np.from_dlpack(r[2])[255] == 255.0
    return n

_measure = measure
def measure(loop, n, warm, sentinel):
    _measure(loop, n, warm, sentinel)
    assert use_count(kept) == kept_uc, (use_count(kept), kept_uc)
""",
)

# --------------------------------------------------------------------------------------------
# Arguments of TensorView parameters (add_one_cpu from examples/add_one): a numpy array lends
# the DLTensor of its capsule, a torch tensor one its exchange API fills, a read-only array is
# refused the Tensor way; each iteration's arrays are new, so a capsule kept would keep 2 KB.
CASES["tensor_views"] = (
    100_000,
    f"""
import importlib.util
import numpy as np
spec = importlib.util.spec_from_file_location("add_one_build", {str(ROOT / "examples" / "add_one" / "build.py")!r})
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)
library = build.build(__import__("pathlib").Path({str(ROOT / "tests" / "_build" / "add_one")!r}))
os.environ["ADD_ONE_PKG_LIBRARY"] = str(library)
sys.path.insert(0, {str(ROOT / "examples" / "add_one")!r})
import add_one_pkg
try:
    import torch
except ImportError:
    torch = None

f = add_one_pkg.add_one_cpu
sentinel = T.TestIntPair(3, 4)
base = np.arange(256, dtype="float32")  # 1 KB
ro = base.copy()
ro.flags.writeable = False

def loop(n):
    for i in range(n):
        x, y = base + i, np.empty(256, dtype="float32")
        f(x, y)
        assert y[255] == 256 + i
        if torch is not None and i % 2 == 0:
            tx = torch.from_numpy(x)
            ty = torch.empty(256)
            f(tx, ty)
            assert ty[0].item() == i + 1
        if i % 16 == 0:
            try:
                f(ro, y)
            except BufferError:
                pass
            else:
                raise AssertionError("a read-only array was accepted")
    return n
""",
)

# --------------------------------------------------------------------------------------------
CASES["structural"] = (
    20_000,
    """
from fixtures import load_expr_ir
from tvmffi_runtime import UNCHANGED, WalkOrder, WalkResult, structural_map, structural_walk
from tvmffi_runtime.structural import on

ir = load_expr_ir()
sentinel = ir.Var("x" * 100)
tree = ir.Add(sentinel, ir.Mul(ir.Add(ir.IntImm(1), ir.IntImm(2)), ir.Add(ir.IntImm(3), sentinel)))

def fold(node):
    a, b = node.a, node.b
    if isinstance(a, ir.IntImm) and isinstance(b, ir.IntImm):
        return ir.IntImm(a.value + b.value if isinstance(node, ir.Add) else a.value * b.value)
    return UNCHANGED

def bump(imm):
    return ir.IntImm(imm.value + 10)

def loop(n):
    for i in range(n):
        seen = []
        def visit(imm):
            seen.append(imm.value)
            return WalkResult.ADVANCE
        structural_walk(tree, on(ir.IntImm, visit), WalkOrder.PRE_ORDER)
        assert seen == [1, 2, 3], seen
        if i & 1:
            out = structural_map(tree, on(ir.IntImm, bump), WalkOrder.POST_ORDER)
            assert out.b.a.a.value == 11 and out.b.a.b.value == 12 and out.b.b.a.value == 13
        else:
            out = structural_map(tree, on(ir.Binary, fold), WalkOrder.POST_ORDER)
            assert out.b.a.value == 3 and out.b.b.a.value == 3  # 1 + 2 folds, 3 + x does not
            assert out.b.b.b.same_as(sentinel)
        assert out.a.same_as(sentinel) and not out.same_as(tree)
    return n
""",
)


def _script(case: str) -> str:
    n, body = CASES[case]
    warm = max(2_000, n // 20)
    return PREAMBLE + textwrap.dedent(body) + f"\nmeasure(loop, {n}, {warm}, sentinel)\n"


def _run_case(case: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    env = dict(os.environ, PYTHONFAULTHANDLER="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", _script(case)], capture_output=True, text=True, timeout=300, env=env)
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
    return proc, result


@pytest.fixture(scope="module")
def leak_runs(request: pytest.FixtureRequest) -> Any:
    """Start every selected case now, two at a time; tests wait for their own."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_no_leak" and hasattr(item, "callspec")
    ] or list(CASES)
    pool = ThreadPoolExecutor(max_workers=2)
    futures: dict[str, Future[Any]] = {c: pool.submit(_run_case, c) for c in dict.fromkeys(selected)}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("case", list(CASES))
def test_no_leak(leak_runs: dict[str, Future[Any]], case: str) -> None:
    proc, result = leak_runs[case].result()
    detail = f"exit code {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0 and result is not None, detail
    n = CASES[case][0]
    print(
        f"\n{case}: {result['iterations']} iterations in {result['seconds']:.2f} s,"
        f" RSS growth {result['rss_growth'] / 1e6:.3f} MB,"
        f" Python objects {result['py_objects_growth']:+d}"
    )
    assert result["iterations"] == n
    assert result["rss_growth"] < RSS_LIMIT, f"{case}: RSS grew by {result['rss_growth'] / 1e6:.1f} MB"
    assert result["use_count_after"] == result["use_count_before"], result
    assert result["callbacks_after"] == result["callbacks_before"], result
    assert result["py_objects_growth"] < PY_OBJECTS_LIMIT, result
    assert result["py_errors"] <= result["py_errors_limit"], result


def test_the_checks_detect_a_leak() -> None:
    """The measuring harness itself: a loop that keeps what it makes fails every check."""
    body = """
sentinel = T.TestIntPair(3, 4)
kept = []

def loop(n):
    for i in range(n):
        kept.append(rt.Array([sentinel, LONG + str(i)]))
        kept.append(rt.Function.from_callable(lambda: i))
    return n
"""
    script = PREAMBLE + body + "\nmeasure(loop, 10000, 100, sentinel)\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["rss_growth"] > RSS_LIMIT
    assert result["use_count_after"] == result["use_count_before"] + 10_000
    assert result["callbacks_after"] == result["callbacks_before"] + 10_000
    assert result["py_objects_growth"] > PY_OBJECTS_LIMIT


# --------------------------------------------------------------------------------------------
# In process: repeated calls do not leak (RSS flat, reference counts back where they were).
# At least 100 000 native calls per case (about 0.3-1.5 s each on one core); payloads are large
# (1 KB strings, multi-element containers) so one leaked copy per call would grow RSS ~100 MB.
# --------------------------------------------------------------------------------------------
CALLS = 100_000
_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


@pytest.fixture(scope="module")
def fns(testing_lib):
    g = rt.get_global_func
    return {
        "echo": g("testing.echo"),
        "nop": g("testing.nop"),
        "apply": g("testing.apply"),
        "use_count": g("testing.object_use_count"),
        "raise": g("testing.test_raise_error"),
        "pair": rt.Function.from_type_key_method("testing.TestIntPair", "__ffi_init__"),
    }


def _cases(f):
    echo, nop, apply = f["echo"], f["nop"], f["apply"]
    pair = f["pair"](1, 2)
    long_str = "a long string " * 80  # ~1 KB: heap string, passed as a raw C string
    nul_str = "with\0nul " * 100  # built as a String object for the call
    blob = bytes(range(256)) * 4
    big = (1 << 4000) + 7
    arr = rt.Array([pair, "x" * 100, 3])
    identity = rt.Function.from_callable(lambda x: x)

    def objects(n):
        for _ in range(n // 2):
            echo(pair)
            nop(pair, arr)

    def strings(n):
        for _ in range(n // 4):
            assert len(echo(long_str)) == len(long_str)
            echo(nul_str)
            echo("short")
            echo(blob)

    mp = rt.Map({"a": arr, "s": long_str})

    def containers(n):
        for _ in range(n // 4):
            echo([pair, long_str, 1, 2.0])  # temporary Array
            echo({"k": pair, "s": long_str})  # temporary Map
            echo(arr)
            list(arr)
            assert arr[0].same_as(pair) and pair in arr and len(arr[1:]) == 2
            assert mp["a"][0].same_as(pair) and mp.get(long_str) is None and "s" in mp and len(list(mp.items())) == 2

    def callbacks(n):
        for _ in range(n // 4):
            apply(identity, pair)
            apply(identity, long_str)
        for _ in range(n // 2):
            apply(lambda x: x, 1)  # a new Function per call, released after it

    def bigints(n):
        for _ in range(n):
            echo(big)

    def errors(n):
        def fail():
            raise ValueError("from Python " + long_str)

        for _ in range(n // 2):
            with contextlib.suppress(ValueError):
                f["raise"]("ValueError", long_str)
            with contextlib.suppress(ValueError):
                apply(fail)

    return pair, {
        "objects": (objects, CALLS),
        "strings": (strings, CALLS),
        "containers": (containers, CALLS),
        "callbacks": (callbacks, CALLS),
        "bigints": (bigints, CALLS),
        "errors": (errors, 10_000),  # exceptions are slower; 10k still shows a per-call leak
    }


@pytest.mark.parametrize("case", ["objects", "strings", "containers", "callbacks", "bigints", "errors"])
def test_no_leak_in_process(fns, case):
    pair, cases = _cases(fns)
    loop, n = cases[case]
    loop(2_000)  # warm caches, free lists and allocator arenas
    gc.collect()
    callbacks_before = _callback.live_callbacks()  # includes `identity`, alive during the loop
    before = rss()
    loop(n)
    gc.collect()
    grown = rss() - before
    assert grown < RSS_LIMIT, f"{case}: RSS grew by {grown / 1e6:.1f} MB over {n} calls"
    assert fns["use_count"](pair) == 2  # `pair` and the one held by the test Array `arr`
    assert _callback.live_callbacks() == callbacks_before  # per-call Functions were all released
    assert len(_errors._PY_ERRORS) <= _errors._PY_ERRORS_LIMIT


def test_use_counts_balanced_after_loops(fns):
    pair = fns["pair"](1, 2)
    echo, use_count = fns["echo"], fns["use_count"]
    arr = rt.Array([pair])
    for _ in range(10_000):
        echo(pair)
        echo([pair, pair])
        fns["apply"](lambda x: x, pair)
        _ = arr[0]
        _ = list(arr)
    del _
    gc.collect()
    assert use_count(pair) == 2
    del arr
    assert use_count(pair) == 1
