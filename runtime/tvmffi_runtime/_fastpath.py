"""Which backend runs the hot paths: the compiled ``_accel`` extension, or pure ctypes.

Chosen once, at import, before any other layer: ``TVMFFI_RUNTIME_PURE=1`` (or a build without a
C compiler) leaves :data:`accel` as None and every layer takes its ctypes branch.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["accel", "accelerated"]

#: The compiled fast path module (``_accel.c``), or None when running on pure ctypes.
accel: Any = None
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
