"""Older apache-tvm-ffi releases: what a release lacks fails alone, with an error naming the
feature and the first release that has it; the rest works (``tvmffi_runtime._features``).

The fast cases run on whichever libtvm_ffi is loaded (on an old one, the feature cases check the
error; on a new one, that the feature works). The slow case makes a venv with the oldest
supported release (``OLDEST_SUPPORTED``, from the package registry; kept under tests/_build and
reused), reruns the core of the suite there (values, objects, containers, the ABI layout, this
file) on both backends, and generates, imports and type-checks the testing library's package.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

import tvmffi_runtime as rt
from tvmffi_runtime import _call, _features, _lib
from tvmffi_runtime._features import (
    BIG_INT,
    OLDEST_SUPPORTED,
    STRUCTURAL_MUTATE,
    STRUCTURAL_VISIT,
    STRUCTURAL_WALK,
    Feature,
    FeatureUnavailableError,
)
from tvmffi_runtime.enums import entry_name, entry_ordinal, registered_entries

from conftest import BUILD_DIR, CHILD_PYTEST_PLUGINS_OFF, ROOT, _build_lock

FEATURES = [BIG_INT, STRUCTURAL_WALK, STRUCTURAL_VISIT, STRUCTURAL_MUTATE]


def _c_functions_named_by_the_runtime() -> set[str]:
    """Every C function of libtvm_ffi the runtime's sources bind by name (``_lib``'s prototypes, the
    addresses handed to the compiled backend, ``LIB.<name>`` calls), not the struct names."""
    package = ROOT / "runtime" / "tvmffi_runtime"
    sources = [*package.rglob("*.py"), *package.rglob("*.c"), *package.rglob("*.h")]
    pattern = re.compile(r'"(TVMFFI[A-Z][A-Za-z0-9]*)"|LIB\.(TVMFFI[A-Z][A-Za-z0-9]*)')
    named = {a or b for path in sources for a, b in pattern.findall(path.read_text())}
    return {n for n in named if not isinstance(getattr(_lib, n, None), type)}


def test_every_c_function_the_runtime_uses_is_exported_or_bound_lazily():
    used = _c_functions_named_by_the_runtime()
    assert len(used) >= 26 and "TVMFFIFunctionCall" in used  # the reader finds them
    lacking = {n for n in used if not hasattr(_lib.LIB, n)}
    assert lacking <= set(_features._SYMBOLS), f"bound at import, but the loaded libtvm_ffi lacks {lacking}"
    assert set(_features._SYMBOLS) <= used
    page = (ROOT / "docs" / "versions.md").read_text()
    assert not [n for n in used if f"`{n}`" not in page], "docs/versions.md lists every C function the runtime uses"


def test_feature_error_names_the_feature_the_release_and_the_library():
    err = _lib.unavailable("TVMFFIBigIntFromByteArray")
    assert isinstance(err, NotImplementedError)
    assert (err.feature, err.missing, err.library) == (BIG_INT, "TVMFFIBigIntFromByteArray", rt.LIB_PATH)
    message = str(err)
    assert message.startswith("integers outside the int64 range (ffi.BigInt): needs apache-tvm-ffi 0.1.14 or newer;")
    assert rt.LIB_PATH in message and message.endswith("has no C function TVMFFIBigIntFromByteArray")
    # the distribution's version, since libtvm_ffi's own number does not tell releases apart
    if err.release is not None:
        assert err.release == importlib.metadata.version("apache-tvm-ffi")
        assert f"apache-tvm-ffi {err.release}'s {rt.LIB_PATH}" in message


def test_a_missing_c_function_of_a_feature_fails_when_called_not_at_import(monkeypatch):
    monkeypatch.setitem(_features._SYMBOLS, "TVMFFINoSuchFunction", STRUCTURAL_WALK)
    missing = _lib._optional_proto("TVMFFINoSuchFunction", ctypes.c_int, [])
    with pytest.raises(
        FeatureUnavailableError, match=r"^structural_walk .* 0\.1\.13 .* C function TVMFFINoSuchFunction$"
    ):
        missing()
    present = _lib._optional_proto("TVMFFIGetVersion", None, [ctypes.POINTER(_lib.TVMFFIVersion)])
    version = _lib.TVMFFIVersion()
    present(version)
    assert (version.major, version.minor, version.patch) == rt.libtvm_ffi_version()


def test_a_missing_global_function_of_a_feature_names_the_feature(monkeypatch):
    monkeypatch.setitem(_features._FUNCTIONS, "ffi.NoSuchFunctionOfAFeature", STRUCTURAL_MUTATE)
    with pytest.raises(
        FeatureUnavailableError, match=r"0\.1\.14 or newer.* global function ffi\.NoSuchFunctionOfAFeature$"
    ):
        _call.global_func("ffi.NoSuchFunctionOfAFeature")
    with pytest.raises(KeyError, match=r"'ffi\.NoSuchFunctionAtAll' is not registered"):
        _call.global_func("ffi.NoSuchFunctionAtAll")


def _use_big_int(echo: rt.Function) -> object:
    return echo(1 << 70)


def _use_walk(echo: rt.Function) -> object:
    seen: list[object] = []
    rt.structural_walk(rt.Array([1, 2]), seen.append)
    return seen[1:]


def _use_visit(echo: rt.Function) -> object:
    seen: list[object] = []
    rt.structural_visit(rt.Array([1, 2]), seen.append)
    return len(seen)


def _use_map(echo: rt.Function) -> object:
    return list(rt.structural_map(rt.Array([1, 2]), lambda v: v * 10 if type(v) is int else rt.UNCHANGED))  # type: ignore[call-overload]


#: each feature -> (a use of it, what that use returns when the feature is there)
USES: dict[Feature, tuple[Callable[[rt.Function], object], object]] = {
    BIG_INT: (_use_big_int, 1 << 70),
    STRUCTURAL_WALK: (_use_walk, [1, 2]),
    STRUCTURAL_VISIT: (_use_visit, 1),
    STRUCTURAL_MUTATE: (_use_map, [10, 20]),
}


@pytest.mark.parametrize("feature", FEATURES, ids=lambda f: f.name.split(" ")[0])
def test_each_feature_works_or_fails_alone_naming_its_release(testing_lib: Any, feature: Feature):
    echo = rt.get_global_func("testing.echo")
    use, result = USES[feature]
    missing = _call.lacks(feature)
    if missing is None:
        assert use(echo) == result
    else:
        with pytest.raises(FeatureUnavailableError) as info:
            use(echo)
        assert info.value.feature == feature and info.value.missing == missing
        assert f"needs apache-tvm-ffi {feature.since} or newer" in str(info.value)
    assert echo(41) == 41 and list(echo(rt.Array(["a"]))) == ["a"]  # the rest still works


def test_enum_entries_are_read_from_the_loaded_releases_layout(testing_lib: Any):
    # testing.TestEnumVariant registers Alpha then Beta in every release from 0.1.11 on; 0.1.13
    # moved the entries from a name -> entry dict to an ordered state object
    entries = registered_entries(rt.type_key_to_index("testing.TestEnumVariant") or -1)
    assert [(entry_name(e), entry_ordinal(e)) for e in entries] == [("Alpha", 0), ("Beta", 1)]
    assert registered_entries(rt.type_key_to_index("testing.TestIntPair") or -1) == []


@pytest.mark.parametrize("pyproject", ["pyproject.toml", "runtime/pyproject.toml"])
def test_both_distributions_declare_the_oldest_supported_release(pyproject: str):
    import tomllib

    project = tomllib.loads((ROOT / pyproject).read_text())["project"]
    wanted = [Requirement(line) for line in project["dependencies"] if line.startswith("apache-tvm-ffi")]
    assert [str(r.specifier) for r in wanted] == [f">={OLDEST_SUPPORTED}"]


def test_the_versions_page_lists_each_feature_with_its_release():
    page = (ROOT / "docs" / "versions.md").read_text()
    assert f"apache-tvm-ffi {OLDEST_SUPPORTED}" in page
    for feature in FEATURES:
        symbols, functions = _features.needed_by(feature)
        rows = [line for line in page.splitlines() if line.startswith("|") and f"`{(symbols + functions)[0]}`" in line]
        assert rows and feature.since in rows[0], feature


# ---------------------------------------------------------------------------------------------
# The core of the suite on the oldest supported release, in a venv of its own
# ---------------------------------------------------------------------------------------------
OLD_VENV = BUILD_DIR / f"venv-apache-tvm-ffi-{OLDEST_SUPPORTED}"
CORE = [
    "tests/runtime/test_runtime_values.py",
    "tests/runtime/test_runtime_objects.py",
    "tests/runtime/test_containers.py",
    "tests/runtime/test_abi_layout.py",
    "tests/runtime/test_old_tvm_ffi.py",
]


def _host_site_packages() -> list[str]:
    """The running interpreter's site-packages: where the generator's dependencies, pytest and
    numpy are installed for this session."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def _old_venv() -> Path:
    """The venv's python: apache-tvm-ffi ``OLDEST_SUPPORTED`` from the package registry in its own
    site-packages, then (a ``.pth`` file, as an editable install has) this checkout's two packages
    and the running interpreter's site-packages, for the generator's dependencies, pytest and
    numpy without installing them again. A ``.pth`` entry comes after the venv's own
    site-packages, so the old ``tvm_ffi`` and its metadata shadow the running one (the test probes
    which it loads). Made once, under a lock, and again when what it holds changes; ``READY``
    lists what a finished one holds."""
    python = OLD_VENV / "bin" / "python"
    ready = OLD_VENV / "READY"
    wanted = [f"apache-tvm-ffi=={OLDEST_SUPPORTED}", *_host_site_packages()]
    if ready.exists() and ready.read_text().split() == wanted:
        return python
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with _build_lock(OLD_VENV):
        if ready.exists() and ready.read_text().split() == wanted:
            return python
        subprocess.run(
            [sys.executable, "-m", "venv", "--clear", "--without-pip", str(OLD_VENV)], check=True, timeout=120
        )
        pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check"]
        install = subprocess.run([*pip, wanted[0]], capture_output=True, text=True, timeout=600)
        assert install.returncode == 0, install.stderr[-3000:]
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        entries = [str(ROOT / "runtime"), str(ROOT), *_host_site_packages()]
        (Path(purelib) / "tvmffi_checkout.pth").write_text("".join(f"{entry}\n" for entry in entries))
        ready.write_text(" ".join(wanted) + "\n")
    return python


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TVMFFI_RUNTIME_LIBTVM_FFI", "PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


@pytest.mark.slow
def test_the_core_of_the_suite_passes_on_the_oldest_supported_release(tmp_path: Path):
    python = str(_old_venv())
    probe = "import tvmffi_runtime as rt, importlib.metadata as m; print(m.version('apache-tvm-ffi'), rt.LIB_PATH)"
    loaded = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=_child_env(), timeout=60)
    assert loaded.returncode == 0, loaded.stderr
    release, library = loaded.stdout.split()
    assert release == OLDEST_SUPPORTED and library.startswith(str(OLD_VENV)), loaded.stdout

    for backend in ("compiled or pure", "pure"):
        env = _child_env(**({"TVMFFI_RUNTIME_PURE": "1"} if backend == "pure" else {}))
        command = [python, "-m", "pytest", "-q", "-rs", *CHILD_PYTEST_PLUGINS_OFF, "-m", "not slow", *CORE]
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
        assert run.returncode == 0, f"{backend}:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
        # what the release lacks is skipped by name, and only that
        assert (
            f"needs apache-tvm-ffi {BIG_INT.since}; the loaded libtvm_ffi has no TVMFFIBigIntFromByteArray"
            in run.stdout
        )

    # the generator on that release: the testing library's package, imported and used, and checked
    testing = Path(library).parent / "libtvm_ffi_testing.so"
    out = tmp_path / "tvmffi_testing"
    generate = [python, "-m", "tvmffi_gen", str(testing), "-o", str(out)]
    gen = subprocess.run(generate, capture_output=True, text=True, env=_child_env(), timeout=300)
    assert gen.returncode == 0, gen.stderr
    use = (
        "import tvmffi_testing.testing as t\n"
        "p = t.TestIntPair(3, 4)\n"
        "assert (p.a, p.b, p.sum()) == (3, 4, 7), p\n"
        "assert [e.name for e in t.TestEnumVariant] == ['Alpha', 'Beta']\n"
        "assert t.TestEnumVariant.Beta.ordinal == 1\n"
    )
    used = subprocess.run(
        [python, "-c", use], cwd=tmp_path, capture_output=True, text=True, env=_child_env(), timeout=60
    )
    assert used.returncode == 0, used.stderr
    check = [python, "-m", "mypy", "--strict", "--no-incremental", "-p", "tvmffi_testing"]
    mypy = subprocess.run(check, cwd=tmp_path, capture_output=True, text=True, env=_child_env(), timeout=300)
    assert mypy.returncode == 0, mypy.stdout


# ---------------------------------------------------------------------------------------------
# tilelang, which pins apache-tvm-ffi<0.1.13 (optional: runs in an environment that has it)
# ---------------------------------------------------------------------------------------------
TILELANG_USE = """
import tvmffi_runtime as rt
import tilelang_typed.ir as ir
import tilelang_typed.tirx as tirx

x = tirx.Var("int32", "x", ir.PrimType("int32"))
total = tirx.Add("int32", x, x)
assert (repr(total), total.a.name) == ("x + x", "x"), total
assert rt.structural_equal(total, tirx.Add("int32", x, x))
"""


@pytest.mark.slow
def test_tilelang_generates_and_gets_stubs_in_its_own_environment(tmp_path: Path):
    import importlib.util

    spec = importlib.util.find_spec("tilelang")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("tilelang is not installed (pip install tilelang==0.1.15 torch==2.13.0 in a venv of its own)")
    library = Path(next(iter(spec.submodule_search_locations))) / "lib" / "libtilelang.so"
    env = _child_env()
    generate = [sys.executable, "-m", "tvmffi_gen", str(library), "-o", str(tmp_path / "tilelang_typed")]
    gen = subprocess.run(generate, capture_output=True, text=True, env=env, timeout=600)
    assert gen.returncode == 0, gen.stderr[-3000:]
    if importlib.metadata.version("tilelang") == "0.1.15":
        assert "wrote " in gen.stdout + gen.stderr and "(501 types," in gen.stdout + gen.stderr
    used = subprocess.run([sys.executable, "-c", TILELANG_USE], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert used.returncode == 0, used.stderr[-3000:]
    stubs = [sys.executable, "-m", "tvmffi_gen", "--stubs-for", "tilelang", "-o", str(tmp_path / "stubs")]
    written = subprocess.run(stubs, capture_output=True, text=True, env=env, timeout=900)
    assert written.returncode == 0, written.stderr[-3000:]
    assert (tmp_path / "stubs" / "tilelang-stubs" / "__init__.pyi").is_file()
