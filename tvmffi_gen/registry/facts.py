"""Registry facts the package generator and ``--stubs-for`` both need, each answered once.

* ``read_type``: what the registry says about one type key, as ``snapshot.TypeSnap`` (read in
  the child process of either: ``snapshot_process.snapshot_in_process`` and ``stubs/child.py``), with
  ``init_excluded`` (which inherited fields the native auto-init does not take);
* ``chain_fields``: the fields of a type and its ancestors, root first (the ancestor walk);
* ``nearest_known``: the first of a type and its ancestors, nearest first, that something knows
  (a type without a class of its own is annotated as its nearest ancestor with one);
* ``auto_init_order``: the parameters of the native auto-init, in the order ``tvm_ffi`` binds
  them;
* ``run_child``: a ``python -m`` child process that sees this checkout's runtime.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from .snapshot import FieldSnap, MethodSnap, TypeSnap

__all__ = [
    "read_type",
    "field_snap",
    "decoded_schema",
    "chain_fields",
    "auto_init_order",
    "nearest_known",
    "run_child",
]


def decoded_schema(raw: Any) -> Any:
    """A type schema as the registry stores it (JSON text inside metadata), decoded from JSON;
    text that is not JSON is kept as it is (``model.typemap.parse_schema`` reads either)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _json_default(value: Any) -> tuple[Any, str | None]:
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return None, repr(value)
        return value, None
    return None, repr(value)


def field_snap(f: Any) -> FieldSnap:
    """One reflected field (``reflection.FieldInfo``) as snapshot data."""
    default, default_repr = _json_default(f.default) if f.has_default else (None, None)
    if f.default_is_factory:
        default, default_repr = None, "<factory>"
    return FieldSnap(
        name=f.name,
        doc=f.doc,
        schema=decoded_schema(f.type_schema),
        writable=f.writable,
        has_default=f.has_default,
        default=default,
        default_repr=default_repr,
        default_is_factory=f.default_is_factory,
        init=f.init,
        kw_only=f.kw_only,
        offset=f.offset,
        size=f.size,
        static_type_index=f.static_type_index,
        flags=f.flags,
    )


def read_type(key: str) -> TypeSnap:
    """What the registry of this process says about type ``key``."""
    from tvmffi_runtime import reflection as R
    from tvmffi_runtime.enums import entry_name, registered_entries

    info = R.type_info(key)
    ts = TypeSnap(type_key=key, ancestors=list(info.ancestors), doc=info.doc)
    ts.fields = [field_snap(f) for f in info.fields]
    for m in info.methods:
        if m.name == "__ffi_init__":
            ts.init = "method"
            ts.init_schema = decoded_schema(m.type_schema)
            ts.init_doc = m.doc
            continue
        ts.methods.append(
            MethodSnap(name=m.name, doc=m.doc, schema=decoded_schema(m.type_schema), is_static=m.is_static)
        )
    if ts.init is None:
        auto_init = R.type_attr(info.type_index, "__ffi_init__")
        if auto_init is not None:
            ts.init = "auto"
            own = {f.name for f in info.fields}
            inherited = [
                f.name for anc in info.ancestors for f in R.type_info(anc).fields if f.init and f.name not in own
            ]
            ts.init_excluded = [n for n in dict.fromkeys(inherited) if not _init_takes(auto_init, n)]
    ts.final = bool(R.type_attr(info.type_index, "__ffi_type_final__"))
    entries = registered_entries(info.type_index)
    if entries:
        ts.enum_entries = [entry_name(e) for e in entries]
    return ts


def _init_takes(init: Any, name: str) -> bool:
    """Whether the auto-init ``init`` takes the keyword argument ``name``.

    The registry records the fields of a type's chain but not which of them its auto-init binds,
    so the init is asked: called with that one keyword (value None), it either rejects the name
    before anything else (not taken) or gets further (taken): it then fails on a missing or
    unconvertible argument, or builds an object that is dropped at once."""
    from tvmffi_runtime import _call

    try:
        init(_call._kwargs_marker(), name, None)
    except TypeError as exc:
        return f"unexpected keyword argument '{name}'" not in str(exc)
    except Exception:  # noqa: BLE001 - any other refusal came after the name was accepted
        return True
    return True


def chain_fields(
    key: str, fields_of: Callable[[str], Iterable[FieldSnap]], ancestors: list[str]
) -> list[tuple[str, FieldSnap]]:
    """The fields of type ``key`` and of its ``ancestors`` (root first), as (owner, field), root's
    first: the order the registry lays a type's fields out in. ``fields_of`` answers a type key's
    own fields (none for a type it does not know)."""
    return [(k, f) for k in [*ancestors, key] for f in fields_of(k)]


T = TypeVar("T")


def nearest_known(key: str, ancestors: list[str], known: Callable[[str], T | None]) -> T | None:
    """``known``'s first answer that is not None for ``key``, then for its ``ancestors`` (root
    first) from the nearest; None when it knows none of them."""
    for k in [key, *reversed(ancestors)]:
        found = known(k)
        if found is not None:
            return found
    return None


def defaults_to_none(f: FieldSnap) -> bool:
    """Whether a field's native default is ``None`` itself (not a factory, not a value the
    snapshot could not spell): a parameter taking it accepts ``None`` whatever its schema says
    (a nullable field whose schema does not say ``Optional``). The package and ``--stubs-for``
    both widen such a parameter to ``T | None``."""
    return f.has_default and not f.default_is_factory and f.default_repr is None and f.default is None


def auto_init_order(t: TypeSnap, chain: list[tuple[str, FieldSnap]]) -> list[tuple[str, FieldSnap]]:
    """The parameters of ``t``'s native auto-init (``TypeSnap.init == "auto"``), from the fields
    of its chain (``chain_fields``), in the order ``tvm_ffi`` binds them: the fields with the init
    flag it takes (an inherited one in ``t.init_excluded`` it does not), positional ones without
    a default, then positional ones with one, then the keyword-only ones."""
    taken = [(o, f) for o, f in chain if f.init and (o == t.type_key or f.name not in t.init_excluded)]
    required = [(o, f) for o, f in taken if not f.kw_only and not f.has_default]
    optional = [(o, f) for o, f in taken if not f.kw_only and f.has_default]
    return required + optional + [(o, f) for o, f in taken if f.kw_only]


def run_child(
    module: str, args: list[str], timeout: float, on_stderr_line: Callable[[str], bool] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m module args`` (stdin closed, output captured as text) with this checkout's
    runtime on ``PYTHONPATH`` when it has one beside the generator (a source tree), so the child
    imports the same ``tvmffi_runtime`` as this process. ``on_stderr_line`` gets each line of
    its stderr as it comes, and the lines it returns True for are not kept in the result's.
    ``subprocess.TimeoutExpired`` passes through: the caller names what did not finish."""
    env = dict(os.environ)
    runtime_dir = str(Path(__file__).resolve().parent.parent / "runtime")
    if os.path.isdir(os.path.join(runtime_dir, "tvmffi_runtime")):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [runtime_dir, env.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", module, *args]
    if on_stderr_line is not None:
        env["TVMFFI_GEN_PROGRESS"] = "1"  # a child that reports progress does so on stderr then
    if on_stderr_line is None:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return _streamed(cmd, env, timeout, on_stderr_line)


def _streamed(
    cmd: list[str], env: dict[str, str], timeout: float, on_line: Callable[[str], bool]
) -> subprocess.CompletedProcess[str]:
    """``run_child``'s run reading stderr line by line (stdout in a thread), killed at ``timeout``."""
    import threading

    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else ""), daemon=True)
    reader.start()
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        proc.kill()

    timer = threading.Timer(timeout, stop)
    timer.start()
    kept: list[str] = []
    try:
        for line in proc.stderr or []:
            if not on_line(line):
                kept.append(line)
        proc.wait()
        reader.join()
    except BaseException:  # an interrupt: the child does not outlive the wait for it
        proc.kill()
        proc.wait()
        raise
    finally:
        timer.cancel()
    if fired.is_set():
        raise subprocess.TimeoutExpired(cmd, timeout)
    return subprocess.CompletedProcess(cmd, proc.returncode, "".join(out), "".join(kept))
