"""A ``for`` loop whose body runs on every core: ``for x in shared(items, out, log): <body>``.

The stubs' libcst phase is a loop over modules whose body reads what was computed before it and
writes one entry of a dict (and appends to a list of warnings). ``shared`` forks a worker per
extra core before the first item; each process runs the body for its share of the items (every
Nth), the workers send what their body wrote (the dict's entries for their items, the list's
additions item by item), and the parent, after its own share, puts everything in the serial
loop's order: the dict's keys and the list's entries come out as a one-process loop makes them.

The body may write only ``out[key(item)]`` (and append to ``log``); whatever else it changes stays
in the process that ran it. It must not ``break``. A body that raises in a worker ends that
worker (the generator is closed as the exception leaves the loop, and a worker never returns from
there); the parent then runs that share itself,
so the error, with its traceback, is raised where a serial loop would raise it. A body that raises
in the parent kills the workers. Without ``os.fork``, with one idle core (``jobs``), with
``TVMFFI_GEN_JOBS=1`` or with few items, it is the plain loop.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["jobs", "shared"]

T = TypeVar("T")

#: fewer items than this per process are not worth a fork
MIN_ITEMS = 8


def jobs() -> int:
    """The processes to use: ``TVMFFI_GEN_JOBS`` when set, else the cores this process may run on
    that nothing else is running on now (Linux's ``procs_running``; on a machine busy with other
    work a worker only adds the cost of forking and merging, measured so)."""
    env = os.environ.get("TVMFFI_GEN_JOBS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"TVMFFI_GEN_JOBS={env!r}: give a number of processes (1 for no workers)") from None
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cores = max(1, os.cpu_count() or 1)
    try:
        with open("/proc/stat", encoding="ascii") as f:
            running = next(int(line.split()[1]) for line in f if line.startswith("procs_running "))
    except (OSError, StopIteration, ValueError, IndexError):
        return cores
    return max(1, min(cores, cores - (running - 1)))  # this process is one of the running


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def shared(
    items: Sequence[T],
    out: dict[Any, Any],
    log: list[Any] | None = None,
    key: Callable[[T], Hashable] = lambda item: item,
    n: int | None = None,
) -> Iterator[T]:
    """Yield ``items`` for a loop body that sets ``out[key(item)]`` and may extend ``log``,
    running the body for every Nth item in a worker process (see the module's doc)."""
    items = list(items)
    n = min(jobs() if n is None else n, len(items) // MIN_ITEMS)
    if n < 2 or not hasattr(os, "fork"):
        yield from items
        return
    base = len(log) if log is not None else 0
    existing = set(out)
    workers: list[tuple[int, int, int]] = []  # (pid, read end, share) of the workers not yet waited for
    for w in range(1, n):
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # a worker: run the body for share w, send what it wrote, and never return
            os.close(r)
            for _, other, _ in workers:
                os.close(other)
            yield from _worker(items[w::n], out, log, key, wfd)
        os.close(wfd)
        workers.append((pid, r, w))
    notes_of: dict[int, list[list[Any]]] = {}
    try:
        notes_of[0] = yield from _share(items[0::n], log)
        for w in _collect(workers, out, notes_of):  # a worker's body raised: its share runs here,
            notes_of[w] = yield from _share(items[w::n], log)  # where the error is reported
    finally:
        for pid, r, _ in workers:  # the parent's body raised: the workers' results are not wanted
            os.close(r)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _ = os.waitpid(pid, 0)
    _serial_order([key(item) for item in items], out, existing)
    if log is not None:
        del log[base:]
        for i in range(len(items)):
            log.extend(notes_of[i % n][i // n])


def _share(items: list[T], log: list[Any] | None) -> Generator[T, None, list[list[Any]]]:
    """Yield ``items`` to the loop body; return what the body added to ``log``, item by item."""
    notes: list[list[Any]] = []
    for item in items:
        start = len(log) if log is not None else 0
        yield item
        notes.append(log[start:] if log is not None else [])
    return notes


def _worker(
    items: list[T], out: dict[Any, Any], log: list[Any] | None, key: Callable[[T], Hashable], wfd: int
) -> Generator[T, None, None]:
    """A worker's loop over its share: sends what the body wrote (``out``'s entries for its items,
    ``log``'s additions) through ``wfd``, or nothing when the body raised, and exits the process."""
    status, payload = 1, b""
    try:
        notes = yield from _share(items, log)
        wrote = {key(item): out[key(item)] for item in items if key(item) in out}
        payload = pickle.dumps((wrote, notes), protocol=pickle.HIGHEST_PROTOCOL)
        status = 0
    except BaseException:  # noqa: BLE001 - GeneratorExit: the body raised (or broke out)
        pass
    finally:
        try:
            with os.fdopen(wfd, "wb") as f:
                _ = f.write(payload)
        finally:
            os._exit(status)


def _collect(
    workers: list[tuple[int, int, int]], out: dict[Any, Any], notes_of: dict[int, list[list[Any]]]
) -> list[int]:
    """Waits for each worker in turn (removing it from ``workers``), puts what its body wrote into
    ``out`` and ``notes_of``; returns the shares whose body raised."""
    redo: list[int] = []
    while workers:
        pid, r, w = workers[0]
        try:
            data = _read_all(r)
        finally:
            os.close(r)
            _ = os.waitpid(pid, 0)
            _ = workers.pop(0)
        try:
            wrote, notes = pickle.loads(data)
        except Exception:  # noqa: BLE001 - nothing (its body raised) or cut short
            redo.append(w)
            continue
        out.update(wrote)
        notes_of[w] = notes
    return redo


def _serial_order(keys: list[Hashable], out: dict[Any, Any], existing: set[Any]) -> None:
    """``out`` in the serial loop's order: the keys it adds by item (keys it only rewrites keep
    their place)."""
    added = [k for k in keys if k in out and k not in existing]
    entries = {k: out.pop(k) for k in added}
    out.update(entries)
