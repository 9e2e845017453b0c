"""The form of generated code this runtime supports, one number that ``bind`` offers as
``API_LEVEL`` and the generator writes into each package it generates.

The generator reads this file without importing the runtime (which would load libtvm_ffi), so it
imports nothing.
"""

__all__ = ["API_LEVEL"]

#: The form of generated code this runtime supports: what ``bind`` offers it (``register``,
#: which binds the fields declared with ``field(kind, offset)`` and ``registry_field``;
#: ``dispatch_base``; the decorated native defs ``registry_function``, ``registry_method`` and
#: ``exported_function``, with a ``result=`` named tuple class; ``replace_method`` and ``KEEP``).
#: A generated package records the level it was generated for and refuses to import on a runtime
#: below it, naming what to upgrade: raise it whenever generated code needs something new there.
API_LEVEL = 5
