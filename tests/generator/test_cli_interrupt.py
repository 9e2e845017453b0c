"""Ctrl-C: ``tvmffi-gen`` ends with one line and the shell's status for SIGINT (130), writes
nothing, and leaves no process of its own behind.

The command runs as a user runs it, in a process group of its own (a terminal's foreground
job), and gets a real SIGINT while it waits for a child: either the whole group gets it, as a
terminal's Ctrl-C sends it, or the generator alone does, as ``kill -INT`` sends it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_bad_input import bad_lib

from tvmffi_gen.cli.main import INTERRUPTED

from stubs_for_run import stubs_for_env

pytestmark = pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(),
    reason="reads a process's children from /proc/PID/task/PID/children (Linux)",
)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _interrupt_while_waiting(args: list[str], env: dict[str, str], cwd: Path, whole_group: bool) -> tuple[int, str]:
    """Start ``python -m tvmffi_gen ARGS``, send SIGINT once it has started a child process
    (to its process group, or to it alone), and return its status and stderr; the child
    must be gone when it has ended."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tvmffi_gen", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (children := _children(proc.pid)):
            assert proc.poll() is None, f"it ended before starting a child: {proc.communicate()[1]}"
            assert time.monotonic() < deadline, "no child process within 60 s"
            time.sleep(0.05)
        time.sleep(0.3)  # the child is past its own start
        if whole_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(c) for c in children), f"left running: {children}"
    return proc.returncode, stderr


@pytest.mark.parametrize("whole_group", [True, False], ids=["terminal-ctrl-c", "kill-int"])
def test_interrupted_package_run_says_one_line_and_writes_nothing(tmp_path: Path, whole_group: bool) -> None:
    lib = bad_lib("hangs")  # loading it never ends: the generator waits for the loading process
    out = tmp_path / "pkg"
    status, stderr = _interrupt_while_waiting([str(lib), "-o", str(out)], stubs_for_env([]), tmp_path, whole_group)
    assert status == INTERRUPTED == 130, stderr
    assert stderr == "tvmffi-gen: interrupted\n"
    assert not out.exists()


def test_interrupted_stubs_run_says_one_line_and_writes_nothing(tmp_path: Path) -> None:
    pkg = tmp_path / "site" / "slow_to_import"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import time\n\ntime.sleep(600)\n")
    env = stubs_for_env([tmp_path / "site"])
    out = tmp_path / "stubs"
    status, stderr = _interrupt_while_waiting(["--stubs-for", "slow_to_import", "-o", str(out)], env, tmp_path, True)
    assert status == INTERRUPTED, stderr
    assert stderr == "tvmffi-gen: interrupted\n"
    assert not out.exists()


def test_interrupted_while_writing_leaves_no_staged_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C between staging two files, or inside the staging of one: every staged file is
    removed, and the files already there are as they were (each is written whole or not at all)."""
    from tvmffi_gen.cli.main import main
    from tvmffi_gen.write import writer

    from conftest import TESTING_LIB

    out = tmp_path / "pkg"
    assert main([str(TESTING_LIB), "-o", str(out), "-q", "--prefix", "testing.TestIntPair"]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real_stage = writer.stage_file
    staged: list[str] = []

    def stage_then_interrupt(target: Path, text: str, mode: int) -> str:
        if staged:
            raise KeyboardInterrupt
        staged.append(real_stage(target, text, mode))
        return staged[-1]

    monkeypatch.setattr(writer, "stage_file", stage_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        main([str(TESTING_LIB), "-o", str(out), "-q"])  # the whole library: several files change
    assert staged and {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    monkeypatch.setattr(writer, "stage_file", real_stage)

    def interrupted_chmod(path: str, mode: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(writer.os, "chmod", interrupted_chmod)
    with pytest.raises(KeyboardInterrupt):
        main([str(TESTING_LIB), "-o", str(out), "-q"])
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
