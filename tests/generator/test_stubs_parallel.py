"""``stubs.parallel.shared``: a loop whose body runs in forked workers, with the serial loop's result."""

from __future__ import annotations

import os

import pytest

from tvmffi_gen.stubs.parallel import jobs, shared

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")


def _run(items: list[str], n: int) -> tuple[dict[str, str], list[str], set[int]]:
    out: dict[str, str] = {"m05": "from before the loop"}  # a key it rewrites keeps its place
    log: list[str] = ["before"]
    pids: set[int] = set()
    for item in shared(items, out, log, n=n):
        pids.add(os.getpid())
        out[item] = item.upper()
        if item.endswith("3"):
            log += [f"{item}:a", f"{item}:b"]
    return out, log, pids


def test_workers_give_the_serial_loops_dict_and_log_in_the_serial_order() -> None:
    items = [f"m{i:02d}" for i in range(40)]
    serial = _run(items, 1)
    for n in (2, 3):
        out, log, pids = _run(items, n)
        assert pids == {os.getpid()}  # the parent ran only its share; the workers' bodies ran elsewhere
        assert list(out.items()) == list(serial[0].items())
        assert log == serial[1]
    assert serial[1][:3] == ["before", "m03:a", "m03:b"]
    assert list(serial[0].items())[:2] == [("m05", "M05"), ("m00", "M00")]


def test_few_items_run_in_the_parent_alone() -> None:
    seen: list[int] = []
    for _ in shared(["a", "b", "c"], {}, n=4):
        seen.append(os.getpid())
    assert seen == [os.getpid()] * 3


def test_a_body_that_raises_in_a_worker_raises_in_the_parent_after_the_rest() -> None:
    items = [f"m{i:02d}" for i in range(32)]
    out: dict[str, str] = {}
    with pytest.raises(KeyError, match="m01"):
        for item in shared(items, out, n=2):
            if item == "m01":  # every 2nd item from the second is the worker's share
                raise KeyError(item)
            out[item] = item
    assert "m00" in out and "m30" in out  # the parent's share ran; m01 raised where a serial loop does


def test_a_body_that_raises_in_the_parent_leaves_no_worker_behind() -> None:
    items = [f"m{i:02d}" for i in range(32)]
    before = _children()
    with pytest.raises(ValueError, match="m02"):
        for item in shared(items, {}, n=2):
            if item == "m02":
                raise ValueError(item)
    assert _children() == before


def _children() -> set[int]:
    me = str(os.getpid())
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().split(") ", 1)[1].split()[1] == me:
                        found.add(int(entry))
            except (OSError, IndexError):
                pass
    return found


def test_jobs_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TVMFFI_GEN_JOBS", "3")
    assert jobs() == 3
    monkeypatch.setenv("TVMFFI_GEN_JOBS", "many")
    with pytest.raises(ValueError, match="TVMFFI_GEN_JOBS='many'"):
        jobs()
    monkeypatch.delenv("TVMFFI_GEN_JOBS")
    assert jobs() >= 1
