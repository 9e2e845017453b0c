"""The ``mypy --strict`` self-check of ``--stubs-for`` and its warm-up: what the stubs import read
into a mypy cache while the package is still being imported (``selfcheck.Warmup``), then used by
the check, which must report what a check without it reports; and when ``build_stubs`` starts one.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tvmffi_gen.stubs import pipeline, selfcheck
from tvmffi_gen.stubs.collected import Collection, ModuleFacts
from tvmffi_gen.stubs.errors import StubsError
from tvmffi_gen.stubs.progress import Progress
from tvmffi_gen.stubs.stubtext import imported_modules

pytestmark = pytest.mark.slow  # stubgen and mypy over stub packages: see tests/README.md


def test_the_modules_a_stub_imports_are_read_from_its_lines() -> None:
    text = (
        "import typing as _t\n"
        "import numpy, os.path as osp  # two\n"
        "from collections.abc import Callable\n"
        "from . import sibling\n"
        "from .inner import x\n"
        "if sys.version_info >= (3, 12):\n"
        "    from indented import y\n"
        "class A:\n"
        "    import_this: int\n"
    )
    assert imported_modules(text) == {"typing", "numpy", "os.path", "collections.abc"}


@pytest.fixture
def extpkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed typed package the stubs import, on mypy's search path; its stub file."""
    site = tmp_path / "site"
    (site / "extpkg").mkdir(parents=True)
    (site / "extpkg" / "py.typed").write_text("")
    ext = site / "extpkg" / "__init__.pyi"
    ext.write_text("class A: ...\n")
    monkeypatch.setenv("PYTHONPATH", str(site))  # for mypy, in its own process
    return ext


STUBS = {"pkg/__init__.pyi": "from extpkg import A, B\ndef f(x): ...\ndef g() -> A: ...\n"}
ERRORS = {"pkg/__init__.pyi": {1: {"attr-defined"}, 2: {"no-untyped-def"}}}


def test_a_warm_check_reports_what_a_cold_one_does_and_lists_what_the_warm_up_read(
    extpkg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold_read: list[str] = []
    assert selfcheck.mypy_errors(STUBS, "pkg", cold_read) == ERRORS
    parsed: list[list[str]] = []  # what each mypy log says was parsed
    real = selfcheck._files_read

    def recorded(log: str, outside: Path) -> list[str]:
        parsed.append(real(log, outside))
        return parsed[-1]

    monkeypatch.setattr(selfcheck, "_files_read", recorded)
    warm = selfcheck.Warmup(["extpkg", "typing"])
    try:
        warm_read: list[str] = []
        assert selfcheck.mypy_errors(STUBS, "pkg", warm_read, warm) == ERRORS
    finally:
        warm.close()
    ext = str(extpkg.resolve())
    warm_up_log, check_log = parsed
    assert ext in warm_up_log and ext not in check_log  # the check took extpkg from the cache
    assert ext in cold_read and ext in warm_read  # and still counts it as read (the cache's key)
    assert set(cold_read) <= set(warm_read)


def test_a_failed_warm_up_leaves_the_check_to_read_everything(extpkg: Path, tmp_path: Path) -> None:
    broken = extpkg.parent.parent / "brokenpkg"
    broken.mkdir()
    (broken / "py.typed").write_text("")
    (broken / "__init__.pyi").write_text("def (:\n")  # a blocking error: mypy exits with 2
    warm = selfcheck.Warmup(["brokenpkg", "extpkg"])
    try:
        assert warm.cache() is None
        read: list[str] = []
        assert selfcheck.mypy_errors(STUBS, "pkg", read, warm) == ERRORS
        assert str(extpkg.resolve()) in read  # read by the check itself
    finally:
        warm.close()
    assert not Path(warm._tmp.name).exists()  # its folder is removed


def test_a_warm_up_that_cannot_start_is_no_error(extpkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = selfcheck._run_mypy

    def no_process(*args: Any, **kwargs: Any) -> Any:
        if "log" in kwargs or len(args) > 4:  # the warm-up's run
            raise OSError(24, "Too many open files")
        return real(*args, **kwargs)

    monkeypatch.setattr(selfcheck, "_run_mypy", no_process)
    warm = selfcheck.Warmup(["extpkg"])
    try:
        assert warm.cache() is None
        assert selfcheck.mypy_errors(STUBS, "pkg", None, warm) == ERRORS
    finally:
        warm.close()


def _package(where: Path) -> dict[str, str]:
    pkg = where / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import numpy\nfrom .a import f\ndef g(a: numpy.ndarray) -> None:\n    pass\n")
    (pkg / "a.py").write_text("import enum\nclass E(enum.Enum):\n    A = 1\ndef f(x: int) -> int:\n    return x\n")
    return {"pkg": str(pkg / "__init__.py"), "pkg.a": str(pkg / "a.py")}


class _Started:
    def __init__(self) -> None:
        self.modules: list[set[str]] = []

    def warmup(self, modules: list[str]) -> selfcheck.Warmup:
        self.modules.append(set(modules))
        return selfcheck.Warmup(["typing"])


def test_a_first_run_warms_up_what_stubgen_s_stubs_import_and_a_rerun_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TVMFFI_GEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TVMFFI_GEN_NO_CACHE", raising=False)
    monkeypatch.setenv("TVMFFI_GEN_NO_ORACLE", "1")
    modules = _package(tmp_path)
    monkeypatch.setattr(pipeline, "modules_on_disk", lambda package, exclude: modules)
    data = Collection("pkg", modules={m: ModuleFacts(p) for m, p in modules.items()})
    monkeypatch.setattr(pipeline, "take_collection", lambda *args: data)
    started = _Started()
    monkeypatch.setattr(pipeline, "Warmup", started.warmup)
    show = Progress(enabled=False)
    for run in range(2):
        got, stubs, warm, oracle = pipeline._import_and_stubgen("pkg", [], [], 60.0, show)
        assert oracle is None  # (TVMFFI_GEN_NO_ORACLE: basedpyright is another test's)
        assert got is data and set(stubs) == {"pkg", "pkg.a"} and "def f(x: int) -> int" in stubs["pkg.a"]
        assert (warm is not None) == (run == 0)  # stubgen's result from the cache: no warm-up
        if warm is not None:
            warm.close()
    # stubgen's imports, and what the rewrite adds (``stubtext.TYPED_IMPORTS``), not the package's own
    assert started.modules == [{"numpy", "enum", "typing", "collections.abc", "ctypes", "tvm_ffi", "_typeshed"}]


def test_no_warm_up_when_the_environment_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TVMFFI_GEN_NO_CACHE", "1")
    monkeypatch.setenv("TVMFFI_GEN_NO_WARMUP", "1")
    modules = _package(tmp_path)
    monkeypatch.setattr(pipeline, "modules_on_disk", lambda package, exclude: modules)
    data = Collection("pkg", modules={m: ModuleFacts(p) for m, p in modules.items()})
    monkeypatch.setattr(pipeline, "take_collection", lambda *args: data)
    _, stubs, warm, _ = pipeline._import_and_stubgen("pkg", [], [], 60.0, Progress(enabled=False))
    assert warm is None and set(stubs) == {"pkg", "pkg.a"}


def test_an_interrupted_import_stops_stubgen_and_closes_the_warm_up_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TVMFFI_GEN_NO_CACHE", "1")
    modules = _package(tmp_path)
    monkeypatch.setattr(pipeline, "modules_on_disk", lambda package, exclude: modules)
    started: list[selfcheck.Warmup] = []

    def warmup(names: Any) -> selfcheck.Warmup:
        started.append(selfcheck.Warmup(names))
        return started[-1]

    monkeypatch.setattr(pipeline, "Warmup", warmup)

    def interrupted(*args: object) -> Collection:
        deadline = time.monotonic() + 60
        while not started and time.monotonic() < deadline:  # until stubgen ran and the warm-up started
            time.sleep(0.05)
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "take_collection", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pipeline._import_and_stubgen("pkg", [], [], 60.0, Progress(enabled=False))
    (warm,) = started
    assert warm._proc is None and not Path(warm._tmp.name).exists()  # ended, its folder removed


def test_a_failed_import_is_reported_without_waiting_for_stubgen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TVMFFI_GEN_NO_CACHE", "1")
    modules = _package(tmp_path)
    monkeypatch.setattr(pipeline, "modules_on_disk", lambda package, exclude: modules)
    slow = "import time; time.sleep(60)"  # a stubgen that would take a minute
    monkeypatch.setattr("tvmffi_gen.stubs.stubgen._RUN_STUBGEN", slow)

    def failing(*args: object) -> Collection:
        time.sleep(0.5)
        raise StubsError("pkg: the import failed")

    monkeypatch.setattr(pipeline, "take_collection", failing)
    t0 = time.monotonic()
    with pytest.raises(StubsError, match="the import failed"):
        pipeline._import_and_stubgen("pkg", [], [], 60.0, Progress(enabled=False))
    assert time.monotonic() - t0 < 20, "stubgen's process was waited for"
