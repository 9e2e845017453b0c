"""Which backend runs the hot paths: the compiled ``_accel`` extension, or pure ctypes.

Chosen once, at import, before any other layer: ``TVMFFI_RUNTIME_PURE=1`` (or a build without a
C compiler) leaves :data:`accel` as None and every layer takes its ctypes branch.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from . import _accel as _types  # the stub (_accel.pyi): what the compiled module offers

__all__ = ["Backend", "accel", "accelerated"]


class Backend(Protocol):
    """The compiled fast path as the runtime uses it: the ``_accel`` module satisfies this (its
    types are in ``_accel.pyi``), so every use is type-checked against the stub."""

    ObjectBase: type[_types.ObjectBase]
    LazyFunction: type[_types.LazyFunction]
    Field: type[_types.Field]

    def init(self, addresses: dict[str, int], /) -> None: ...
    def call(self, handle: Any, args: Any, name: Any = ..., /) -> Any: ...
    def view_items(self, address: int, count: int, /) -> list[Any]: ...
    def construct(
        self, obj: object, handle: int, args: tuple[object, ...], name: str, type_key: str, /
    ) -> None: ...
    def function_create(self, fn: object, mode: int, /) -> int: ...
    def callback_function(self, cls: type, fn: object, mode: int, /) -> Any: ...
    def set_unchanged(self, obj: Any, /) -> None: ...
    def live_callbacks(self) -> int: ...
    def set_gil_auto(self, flag: bool, /) -> None: ...
    def graph_check(
        self, root: int, type_index: int, structural: bool, cycles: bool, limit: int, plan_for: Any, map_edges: Any, /
    ) -> tuple[str, list[list[int]], int] | None: ...


#: The compiled fast path module (``_accel.c``), or None when running on pure ctypes.
accel: Backend | None = None
if os.environ.get("TVMFFI_RUNTIME_PURE", "") in ("", "0"):
    try:
        from . import _accel as accel
    except ModuleNotFoundError:  # built without a C compiler: everything runs on ctypes
        accel = None
    except ImportError as exc:  # built, but unusable here (another Python, say)
        import warnings

        warnings.warn(f"tvmffi_runtime: compiled fast path unusable ({exc}); running on ctypes", stacklevel=2)
        accel = None


def accelerated() -> bool:
    """Whether the compiled fast path is in use (False: pure ctypes)."""
    return accel is not None
