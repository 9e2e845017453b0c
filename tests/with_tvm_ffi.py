"""Run a test file's cases in child interpreters that import ``tvm_ffi`` next to our runtime.

Importing ``tvm_ffi`` changes process-wide state (its allocator, environment hooks, registered
types and functions), so the tests that compare with it or hand objects to it run in a child
pytest, once on each runtime path, instead of in the suite's own process. A file marks its
cases with :data:`child_only` and calls :func:`run_cases_in_children` from one driver test.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import CHILD_PYTEST_PLUGINS_OFF, ROOT

#: Set in the child: the cases run there (and the driver does not).
CHILD_ENV = "TVMFFI_TESTS_WITH_TVM_FFI"
IN_CHILD = os.environ.get(CHILD_ENV) == "1"

#: Marks a case that runs only in the child; the suite's own run deselects it (conftest.py),
#: so it is neither run next to the suite's state nor reported as a skipped gap.
child_only = pytest.mark.tvm_ffi_child


def run_cases_in_children(test_file: str, pure: bool) -> None:
    """Run ``test_file``'s cases in a child pytest on the compiled or pure-ctypes path (the
    driver tests, named ``*in_children*``, are deselected there); none may be skipped."""
    if IN_CHILD:
        pytest.skip("this is the child run")
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi's Python package is not installed")
    env = {**os.environ, CHILD_ENV: "1"}
    env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *CHILD_PYTEST_PLUGINS_OFF, "-rs", "-k", "not in_children", test_file],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, proc.stdout[-3000:]
