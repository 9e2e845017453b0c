"""The library's global functions ``plane.*``, as ``tvm_ffi`` functions."""

import tvm_ffi

tvm_ffi.init_ffi_api("plane", __name__)
