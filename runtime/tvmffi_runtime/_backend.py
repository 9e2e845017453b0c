"""The backend that runs the hot paths, chosen once, here: :data:`backend` is the compiled
``_accel`` extension, or the pure-ctypes ``_pure`` package when ``TVMFFI_RUNTIME_PURE=1`` is set
or the extension was not built (or cannot load here).

Both export the same names with the same meaning; ``_accel.pyi`` is the one statement of them
(the type checkers see :data:`backend` as that stub, and a test holds both modules to it).
Every layer calls ``backend.X``; none asks which one it is.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

__all__ = ["accelerated", "backend"]


def _compiled() -> object | None:
    if os.environ.get("TVMFFI_RUNTIME_PURE", "") not in ("", "0"):
        return None
    try:
        from . import _accel
    except ModuleNotFoundError:  # built without a C compiler: everything runs on ctypes
        return None
    except ImportError as exc:  # built, but unusable here (another Python, say)
        import warnings

        warnings.warn(f"tvmffi_runtime: compiled fast path unusable ({exc}); running on ctypes", stacklevel=3)
        return None
    return _accel


_COMPILED = _compiled()
_ACCELERATED = _COMPILED is not None
if TYPE_CHECKING:
    from . import _accel as backend
elif _COMPILED is not None:
    backend = _COMPILED
else:
    from . import _pure as backend


def accelerated() -> bool:
    """Whether the compiled backend is in use (False: pure ctypes)."""
    return _ACCELERATED
