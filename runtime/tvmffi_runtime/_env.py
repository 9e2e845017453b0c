"""Environment hooks native code calls into Python through: signal checks and the GIL
(``TVMFFIEnvRegisterCAPI``), registered once at import."""

from __future__ import annotations

import ctypes

from . import _lib
from ._errors import _check

_c_void_p = ctypes.c_void_p


def _register_env_capi() -> None:
    api = ctypes.pythonapi
    api.PyErr_CheckSignals.restype = ctypes.c_int
    hooks = {
        # The C function itself, not a Python callback: a pending SIGINT handler would run on
        # entry to a Python callback, before any try block, and ctypes would print the
        # KeyboardInterrupt as "ignored" and return an undefined value. ffi_call unwraps the
        # exception this leaves set (see _python_error_set_in_native).
        b"PyErr_CheckSignals": ctypes.cast(api.PyErr_CheckSignals, _c_void_p).value,
        b"PyGILState_Ensure": ctypes.cast(api.PyGILState_Ensure, _c_void_p).value,
        b"PyGILState_Release": ctypes.cast(api.PyGILState_Release, _c_void_p).value,
    }
    for name, addr in hooks.items():
        _check(_lib.EnvRegisterCAPI(name, addr))


_register_env_capi()
