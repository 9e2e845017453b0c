"""Python's cyclic garbage collector made to run rarely over the whole heap, for the two
processes of ``--stubs-for`` that build a large heap and keep it to the end: the child importing
the package (every module, class and function of tvm) and the parent's libcst rewrite (a tree per
stub). A full collection walks every object alive, and the default thresholds start one every
seventy thousand or so net allocations; for tvm that was a fifth of either phase, to free a few
thousand objects (benchmarks/results_stubs.md). Young objects, where cyclic garbage is found,
are collected as usual.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Generator

__all__ = ["rare_full_collections"]

#: young collections between two full ones (the interpreter's default is 10)
FULL_EVERY = 1000


@contextlib.contextmanager
def rare_full_collections() -> Generator[None]:
    """Within it, a full collection only after ``FULL_EVERY`` collections of the middle
    generation; the thresholds as they were afterwards. (An incremental collector, which has no
    third threshold, is left as it is.)"""
    young, middle, old = gc.get_threshold()
    if old == 0:
        yield
        return
    gc.set_threshold(young, middle, max(old, FULL_EVERY))
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)
