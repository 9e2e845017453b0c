"""When native calls release the GIL (``set_release_gil``), seen from inside the native call.

The default, ``"always"``, releases it on every call; the opt-in ``"auto"`` keeps it when no
other thread could want it. The scenarios below run under ``"auto"`` unless they say otherwise.

The probe library asks CPython whether the calling thread holds the GIL while the call runs
(``gil.held``), and calls a Python callback from a native worker thread it waits for
(``gil.call_on_thread``): the case that would deadlock if the GIL were kept. Each scenario runs in
a fresh interpreter (with a timeout), so threads, callbacks or an imported tvm_ffi left by other
tests do not decide it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, build_shared

PROBE_SOURCE = (ROOT / "tests" / "fixtures" / "gil_probe.cc").read_text()
PRELUDE = """
import sys, threading
import tvmffi_runtime as rt
rt.load_library(sys.argv[1])
held = rt.get_global_func("gil.held")
default = rt.set_release_gil(sys.argv[2])
"""


@pytest.fixture(scope="module")
def probe() -> Path:
    return build_shared("gil_probe", PROBE_SOURCE, extra=["-ldl"])


def _run(
    probe: Path, body: str, pure: bool = False, extra_env: dict[str, str] | None = None, policy: str = "auto"
) -> list[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "runtime"), os.environ.get("PYTHONPATH", "")]))
    env.pop("TVMFFI_RUNTIME_PURE", None)
    env.pop("TVMFFI_RUNTIME_RELEASE_GIL", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    env.update(extra_env or {})
    script = PRELUDE + textwrap.dedent(body)
    proc = subprocess.run(
        [sys.executable, "-c", script, str(probe), policy], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def _compiled() -> bool:
    from tvmffi_runtime import _backend

    return _backend.accelerated()


needs_compiled = pytest.mark.skipif(not _compiled(), reason="the GIL policy is the compiled path's")


@needs_compiled
def test_by_default_every_call_releases_it(probe: Path) -> None:
    assert _run(probe, "print(held(), default)", policy="always") == ["0", "always"]


@needs_compiled
def test_auto_keeps_it_over_a_call_of_a_lone_thread(probe: Path) -> None:
    assert _run(probe, "print(held(), default)") == ["1", "always"]
    out = _run(probe, "print(held(), default)", policy="always", extra_env={"TVMFFI_RUNTIME_RELEASE_GIL": "auto"})
    assert out == ["0", "auto"]  # the environment chose auto at import; the script then set always
    out = _run(probe, "rt.set_release_gil('always'); print(held()); rt.set_release_gil('auto'); print(held())")
    assert out == ["0", "1"]


@needs_compiled
def test_another_python_thread_gets_the_gil_while_native_code_runs(probe: Path) -> None:
    out = _run(
        probe,
        """
        ticks = 0
        stop = threading.Event()
        def spin():
            global ticks
            while not stop.is_set():
                ticks += 1
        t = threading.Thread(target=spin)
        t.start()
        print(held())
        before = ticks
        rt.get_global_func("gil.sleep_ms")(300)  # the other thread runs meanwhile
        print(ticks > before)
        stop.set(); t.join()
        print(held())  # alone again: kept
        """,
    )
    assert out == ["0", "True", "1"]


@needs_compiled
def test_a_live_python_callback_makes_calls_release_it(probe: Path) -> None:
    out = _run(
        probe,
        """
        import gc
        f = rt.Function.from_callable(lambda x: x + 1)
        print(held())
        del f; gc.collect()
        print(held())
        """,
    )
    assert out == ["0", "1"]


def test_a_callback_called_from_a_native_thread_does_not_deadlock(probe: Path) -> None:
    # native code waits for its worker thread, which needs the GIL to run the callback
    body = """
    print(rt.get_global_func("gil.call_on_thread")(lambda x: x * 2, 21))
    rt.Function.register_global("gil_test.double", lambda x: x * 2)
    print(rt.get_global_func("gil.call_global_on_thread")("gil_test.double", 4))
    """
    for pure in (False, True):
        assert _run(probe, body, pure=pure) == ["42", "8"]


@needs_compiled
def test_another_binding_imported_makes_calls_release_it(probe: Path) -> None:
    # tvm_ffi's callables are invisible to us: once it is imported, every call releases
    out = _run(
        probe,
        """
        print(held())
        import tvm_ffi
        tvm_ffi.register_global_func("gil_test.triple", lambda x: x * 3)
        print(held())
        print(rt.get_global_func("gil.call_global_on_thread")("gil_test.triple", 5))
        """,
    )
    assert out == ["1", "0", "15"]


def test_the_pure_path_always_releases_it(probe: Path) -> None:
    assert _run(probe, "print(held(), rt.set_release_gil('auto'))", pure=True) == ["0", "auto"]


def test_a_bad_policy_is_refused_by_name() -> None:
    import tvmffi_runtime as rt

    with pytest.raises(ValueError, match="expected 'auto' or 'always', got 'never'"):
        rt.set_release_gil("never")  # type: ignore[arg-type]


@needs_compiled
def test_ctrl_c_interrupts_a_call_that_keeps_the_gil(probe: Path, testing_lib: Path) -> None:
    # no Python thread sends the signal (that would make the call release the GIL): a child does
    out = _run(
        probe,
        f"""
        import os, signal, subprocess, time
        signal.signal(signal.SIGINT, signal.default_int_handler)
        rt.load_library({str(testing_lib)!r})
        run_check_signal = rt.get_global_func("testing.run_check_signal")
        print(held())
        subprocess.Popen(["sh", "-c", f"sleep 0.5; kill -INT {{os.getpid()}}"])
        start = time.monotonic()
        try:
            run_check_signal(10)
        except KeyboardInterrupt:
            print("INTERRUPTED", time.monotonic() - start < 5)
        """,
    )
    assert out == ["1", "INTERRUPTED", "True"]


# keep_gil: one generated function keeps the GIL whatever the policy; the rest follow it
KEPT_PRELUDE = """
from tvmffi_runtime import bind

@bind.registry_function("gil.held")
def held_def() -> int: ...

@bind.registry_function("gil.sleep_ms")
def sleep_def(ms: int) -> None: ...
"""


@needs_compiled
def test_keep_gil_keeps_it_over_one_generated_function_only(probe: Path) -> None:
    body = """
    print(held_def(), rt.keep_gil(held_def), held_def(), held())  # held(): a Function, the policy's
    print(rt.keep_gil(held_def, False), held_def())
    """
    assert _run(probe, KEPT_PRELUDE + textwrap.dedent(body), policy="always") == ["0", "False", "1", "0", "True", "0"]


@needs_compiled
def test_by_default_another_thread_runs_during_a_long_generated_call(probe: Path) -> None:
    # the default policy with a Python thread spinning: it runs while the native call sleeps
    body = """
    ticks = 0
    stop = threading.Event()
    def spin():
        global ticks
        while not stop.is_set():
            ticks += 1
    t = threading.Thread(target=spin)
    t.start()
    before = ticks
    sleep_def(300)
    print(ticks > before, held_def())
    stop.set(); t.join()
    """
    assert _run(probe, KEPT_PRELUDE + textwrap.dedent(body), policy="always") == ["True", "0"]


def test_keep_gil_on_the_pure_path_changes_nothing(probe: Path) -> None:
    body = "print(rt.keep_gil(held_def), held_def(), held_def.release_gil)"
    assert _run(probe, KEPT_PRELUDE + textwrap.dedent(body), pure=True, policy="always") == ["False", "0", "False"]


def test_keep_gil_refuses_what_is_not_a_generated_function_by_name() -> None:
    import tvmffi_runtime as rt
    from tvmffi_runtime import _backend

    with pytest.raises(TypeError, match=r"keep_gil: .*is not a function or method of a generated package"):
        rt.keep_gil(rt.get_global_func("ffi.Array"))
    lazy = _backend.backend.LazyFunction("ffi.Array", lambda: rt.get_global_func("ffi.Array"))
    with pytest.raises(TypeError, match=r"'ffi\.Array': release_gil must be True or False"):
        lazy.release_gil = 1  # type: ignore[assignment]
