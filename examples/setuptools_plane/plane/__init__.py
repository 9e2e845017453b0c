"""plane: a package built on tvm_ffi over the library setuptools compiles into it (``_plane``)."""

import sysconfig
from pathlib import Path

import tvm_ffi

#: the library, loaded once: its static initialisers register plane.Rect and the plane.* functions
_LIB = tvm_ffi.load_module(Path(__file__).with_name("_plane" + sysconfig.get_config_var("EXT_SUFFIX")))

from . import _ffi_api  # noqa: E402 - the library registers what _ffi_api looks up
from ._ffi_api import describe, square  # noqa: E402
from .shapes import Rect  # noqa: E402

__all__ = ["Rect", "_ffi_api", "describe", "square"]
