"""The form of generated code this runtime supports, one number that ``bind`` offers as
``API_LEVEL`` and the generator writes into each package it generates.

The generator reads this file without importing the runtime (which would load libtvm_ffi), so it
imports nothing.
"""

__all__ = ["API_LEVEL", "FIELDS_CLASS"]

#: The form of generated code this runtime supports: what ``bind`` offers it (``register``,
#: which binds the fields declared with ``field(kind, offset)`` and ``registry_field``, in the
#: class's nested ``FIELDS_CLASS`` or in its body;
#: ``dispatch_base``; the decorated native defs ``registry_function``, ``registry_method`` and
#: ``exported_function``, with a ``result=`` named tuple class; ``replace_method`` and ``KEEP``).
#: A generated package records the level it was generated for and refuses to import on a runtime
#: below it, naming what to upgrade: raise it whenever generated code needs something new there.
API_LEVEL = 6

#: The class nested in a generated class that holds its field declarations: ``register`` moves
#: each onto the class under its name. Kept out of the class body's own names so that an editor
#: resolving a field (jedi's hover) finds the ``.pyi`` face's ``name: T``, not the descriptor.
#: A private name (``_Class__fields`` at run time): each class's is its own, so a subclass's does
#: not override its base's for a type checker.
FIELDS_CLASS = "__fields"
