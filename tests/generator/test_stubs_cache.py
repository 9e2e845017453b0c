"""``stubs.cache``: stubgen's and the libcst rewrite's results, reused only for the same inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tvmffi_gen.stubs import cache, selfcheck
from tvmffi_gen.stubs.collected import Collection
from tvmffi_gen.stubs.conversions import Conversions

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md


def _data(n: int) -> Collection:
    """A collection told apart from another by ``n`` (its version)."""
    return Collection(package="p", version=str(n))


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("TVMFFI_GEN_CACHE_DIR", str(where))
    monkeypatch.delenv("TVMFFI_GEN_NO_CACHE", raising=False)
    return where


def _package(where: Path) -> dict[str, str]:
    pkg = where / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("def f(x: int) -> int:\n    return x\n")
    (pkg / "b.py").write_text("X = 1\n")
    (pkg / "b.pyi").write_text("X: int\n")  # the package's own stub: read, not cached
    return {"pkg": str(pkg / "__init__.py"), "pkg.a": str(pkg / "a.py"), "pkg.b": str(pkg / "b.py")}


def test_stubgen_results_are_reused_until_a_source_changes(tmp_path: Path, cache_home: Path) -> None:
    modules = _package(tmp_path)
    first = cache.CachedPythonStubs(modules)
    assert first._proc is not None  # nothing cached yet: stubgen runs
    result = first.result({"pkg", "pkg.a", "pkg.b"})
    assert "def f(x: int) -> int: ..." in result["pkg.a"] and result["pkg.b"] == "X: int\n"
    again = cache.CachedPythonStubs(modules)
    assert again._proc is None  # every source unchanged: no stubgen
    assert again.result({"pkg", "pkg.a", "pkg.b"}) == result
    assert list(cache.CachedPythonStubs(modules).result({"pkg.a", "pkg.b"})) == ["pkg.b", "pkg.a"]
    Path(modules["pkg.a"]).write_text("def f(x: str) -> str:\n    return x\n")
    changed = cache.CachedPythonStubs(modules)
    assert changed._proc is not None
    assert "def f(x: str) -> str: ..." in changed.result({"pkg.a"})["pkg.a"]
    assert len(list((cache_home / "stubgen").glob("*.json"))) == 2


def test_a_damaged_entry_is_a_miss(tmp_path: Path, cache_home: Path) -> None:
    modules = _package(tmp_path)
    expected = cache.CachedPythonStubs(modules).result(set(modules))
    (entry,) = (cache_home / "stubgen").glob("*.json")
    entry.write_text('{"key": "not this one", "value": {}}')
    again = cache.CachedPythonStubs(modules)
    assert again._proc is not None
    assert again.result(set(modules)) == expected


def test_off_by_option_or_environment(tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modules = _package(tmp_path)
    with cache.disabled():
        assert cache.cache_dir() is None
        cache.CachedPythonStubs(modules).result(set(modules))
    assert not cache_home.exists()
    monkeypatch.setenv("TVMFFI_GEN_NO_CACHE", "1")
    assert cache.cache_dir() is None
    monkeypatch.setenv("TVMFFI_GEN_NO_CACHE", "0")
    assert cache.cache_dir() == cache_home
    monkeypatch.delenv("TVMFFI_GEN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "tvmffi-gen"


def test_the_rewrite_is_reused_only_for_the_same_data_and_stubs(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, str]] = []

    def fake_augment(
        data: Collection,
        stubs: dict[str, str],
        conversions: Conversions,
        inferred: dict[str, dict[str, str]] | None = None,
    ) -> tuple[dict[str, str], list[str]]:
        calls.append(stubs)
        return {m: f"# {data.version}\n{t}" for m, t in stubs.items()}, [f"warning {data.version}"]

    monkeypatch.setattr(cache, "augment", fake_augment)
    stubs = {"p": "x: int\n", "p.a": "y: str\n"}
    first = cache.cached_augment(_data(1), stubs)
    assert cache.cached_augment(_data(1), dict(stubs)) == first and len(calls) == 1
    assert list(first[0]) == ["p", "p.a"]
    assert cache.cached_augment(_data(2), stubs)[1] == ["warning 2"] and len(calls) == 2
    assert cache.cached_augment(_data(1), {**stubs, "p.a": "y: bytes\n"})[0]["p.a"] == "# 1\ny: bytes\n"
    assert len(calls) == 3
    other = Conversions(accepted={"p.Expr": ("int",)})  # another package's conversions: another key
    assert cache.cached_augment(_data(1), stubs, other) == first and len(calls) == 4
    inferred = {"p": {"f": "int"}}  # what basedpyright inferred from the sources: another key
    assert cache.cached_augment(_data(1), stubs, other, inferred) == first and len(calls) == 5
    assert cache.cached_augment(_data(1), stubs, other, inferred) == first and len(calls) == 5


def test_the_self_check_is_reused_until_a_stub_or_what_mypy_reads_changes(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an installed typed package the stubs import, on mypy's search path
    site = tmp_path / "site"
    (site / "extpkg").mkdir(parents=True)
    (site / "extpkg" / "py.typed").write_text("")
    ext = site / "extpkg" / "__init__.pyi"
    ext.write_text("class A: ...\n")
    monkeypatch.setenv("PYTHONPATH", str(site))  # for mypy, in its own process
    monkeypatch.setattr(sys, "path", [sys.path[0], str(site), *sys.path[1:]])  # for the cache's key
    runs: list[dict[str, str]] = []
    real = selfcheck.mypy_errors

    def counted(
        files: dict[str, str], top: str, read: list[str] | None = None, warm: selfcheck.Warmup | None = None
    ) -> dict[str, dict[int, set[str]]]:
        runs.append(files)
        return real(files, top, read, warm)

    monkeypatch.setattr(selfcheck, "mypy_errors", counted)
    stubs = {"pkg/__init__.pyi": "from extpkg import A\ndef f(x): ...\ndef g() -> A: ...\n"}
    expected = {"pkg/__init__.pyi": {2: {"no-untyped-def"}}}
    assert cache.cached_mypy_errors(stubs, "pkg") == expected and len(runs) == 1
    (entry,) = (cache_home / "selfcheck").glob("*.json")
    assert str(ext.resolve()) in entry.read_text()  # what mypy read outside the stubs is listed
    assert cache.cached_mypy_errors(dict(stubs), "pkg") == expected and len(runs) == 1  # a hit: no mypy
    changed = {"pkg/__init__.pyi": "from extpkg import A\ndef f(x: int) -> None: ...\ndef g() -> A: ...\n"}
    assert cache.cached_mypy_errors(changed, "pkg") == {} and len(runs) == 2  # another stub text
    ext.write_text("class B: ...\n")  # an installed file mypy read, edited in place
    assert cache.cached_mypy_errors(stubs, "pkg") == {"pkg/__init__.pyi": {1: {"attr-defined"}, 2: {"no-untyped-def"}}}
    assert len(runs) == 3
    ext.write_text("class A: ...\n")
    assert cache.cached_mypy_errors(stubs, "pkg") == expected and len(runs) == 4  # its entry was replaced
    (site / "other-1.0.dist-info").mkdir()  # a package installed beside it: another key
    assert cache.cached_mypy_errors(stubs, "pkg") == expected and len(runs) == 5
    assert cache.cached_mypy_errors(stubs, "pkg") == expected and len(runs) == 5
    with cache.disabled():
        assert cache.cached_mypy_errors(stubs, "pkg") == expected and len(runs) == 6


def test_the_allowlist_is_reused_only_for_the_same_data_and_stubs(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, str]] = []

    def fake_allowlist(data: Collection, final: dict[str, str], frozen: dict[str, set[str]] | None) -> str:
        calls.append(final)
        return f"{data.version} {sorted(final.values())} {frozen}\n"

    monkeypatch.setattr(cache, "stubtest_allowlist", fake_allowlist)
    monkeypatch.setattr(cache, "frozen_attributes", lambda data, stubs: {"p.C": set(stubs)})
    stubs, final = {"p": "x: int\n"}, {"p": "x: int\ny: str\n"}
    first = cache.cached_allowlist(_data(1), stubs, final)
    assert first == "1 ['x: int\\ny: str\\n'] {'p.C': {'p'}}\n" and len(calls) == 1
    assert cache.cached_allowlist(_data(1), dict(stubs), dict(final)) == first and len(calls) == 1
    assert cache.cached_allowlist(_data(2), stubs, final).startswith("2 ") and len(calls) == 2
    assert cache.cached_allowlist(_data(1), {"p": "x: str\n"}, final) == first and len(calls) == 3
    assert cache.cached_allowlist(_data(1), stubs, {"p": "z: int\n"}) != first and len(calls) == 4
