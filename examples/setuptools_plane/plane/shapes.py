"""The library's object types, registered with tvm_ffi."""

import tvm_ffi


@tvm_ffi.register_object("plane.Rect")
class Rect(tvm_ffi.Object):
    """A rectangle: its fields, constructor and ``area`` come from the library's registry."""
