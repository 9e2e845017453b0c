"""Python names for registry names: one deterministic rule, stated in docs/generated-packages.md.

1. Sanitise: the name is NFKC-normalised (as Python reads identifiers); every character
   ``str.isidentifier()`` does not accept inside a name becomes ``_``; a name that cannot start
   with its first character (a digit) gets a leading ``_``; an empty name becomes ``_``.
2. Reserve: a name that is a keyword, a soft keyword, a builtin our annotations use, an alias
   generated modules import under (``_t``, ``_rt``, ``_bind``, ...), a file the package root holds
   (``visitors``, ``_lib``), the class holding a class's field declarations (``__fields``), or a
   member the runtime base class already defines (for enums also
   ``name``, ``ordinal``, ``value``) gets a trailing ``_``; a dunder name or a name
   starting with ``_ffi`` (the prefix of generated private helpers) gets a leading ``x``.
3. Collide: within one scope, names are claimed in precedence order (module scope: subpackages,
   then classes, then functions; class scope: fields, then methods), each kind in sorted registry
   order; a later claimant of a taken name gets ``_`` appended until it is free.

The registry name is always kept in the docstring, so nothing is lost.
"""

from __future__ import annotations

import keyword
import re
import unicodedata

from ..registry.runtime_files import fields_class

__all__ = [
    "RESERVED_ENUM",
    "RESERVED_ROOT",
    "sanitize",
    "py_name",
    "Scope",
    "snake_case",
    "RESERVED_MODULE",
    "RESERVED_CLASS",
    "OBJECT_MEMBERS",
]

# Names our generated annotations and code refer to unqualified, and so must never be shadowed.
_ANNOTATION_BUILTINS = frozenset(
    {"int", "float", "bool", "str", "bytes", "object", "type", "None", "property", "staticmethod"}
)  # fmt: skip
_SOFT_KEYWORDS = frozenset({"match", "case", "_", "type"})
# The aliases every generated module imports under (``import tvmffi_runtime as _rt``, ...).
_MODULE_ALIASES = frozenset({"_t", "_abc", "_rt", "_bind", "_os", "_lib", "_ctypes", "_default_hook"})
RESERVED_MODULE = frozenset(keyword.kwlist) | _SOFT_KEYWORDS | _ANNOTATION_BUILTINS | _MODULE_ALIASES | {"annotations"}
#: Files the generator writes at the package root, which a namespace must not shadow.
RESERVED_ROOT = RESERVED_MODULE | {"visitors", "py"}
#: Members of the runtime's enum bases that an enum entry must not hide.
RESERVED_ENUM = frozenset({"name", "ordinal", "value"})
# Members of tvmffi_runtime.Object (and Python object machinery) a generated member must not hide.
RESERVED_CLASS = RESERVED_MODULE | frozenset(
    {"same_as", "type_key", "type_index", "handle", "mro", "register", "_h", "_t", fields_class()}
)
#: Every member name a generated class inherits from ``tvmffi_runtime.Object``: ``object``'s and
#: the runtime's own (``__del__`` with the pure-Python backend only). Recorded here because the
#: generator does not import the runtime (that loads libtvm_ffi); tests/generator/test_model.py
#: checks it against the runtime's ``dir(Object)``.
OBJECT_MEMBERS = frozenset(dir(object)) | frozenset(
    {
        "__annotations__", "__copy__", "__deepcopy__", "__del__", "__module__", "__slots__",
        "__tvm_ffi_object__", "__weakref__", "_h", "_t", "_type_index", "_type_key", "handle",
        "same_as", "type_index", "type_key",
    }
)  # fmt: skip


def sanitize(name: str) -> str:
    """Rule 1: make ``name`` a valid identifier, as Python reads it.

    Python reads identifiers NFKC-normalised (``ﬁ`` is ``fi``), so the name is normalised first;
    then every character ``str.isidentifier()`` does not accept inside a name becomes ``_``, and
    a name that cannot start with its first character (a digit) gets a leading ``_``.
    """
    text = unicodedata.normalize("NFKC", name)
    out = "".join(c if ("_" + c).isidentifier() else "_" for c in text)
    if not out:
        return "_"
    if not out[0].isidentifier():
        out = "_" + out
    return out


def py_name(name: str, reserved: frozenset[str] = RESERVED_MODULE) -> str:
    """Rules 1 and 2 for one name."""
    out = sanitize(name)
    if out.startswith("_ffi") or _is_dunder(out):  # our helpers' prefix; Python's special names
        out = "x" + out
    while out in reserved or keyword.iskeyword(out):
        out += "_"
    return out


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__") and bool(name.strip("_"))


class Scope:
    """Rule 3: hands out unique names in one namespace, in the order they are claimed."""

    def __init__(self, reserved: frozenset[str] = RESERVED_MODULE, taken: set[str] | None = None) -> None:
        self.reserved = reserved
        self.taken: set[str] = set(taken or ())

    def claim(self, name: str) -> str:
        out = py_name(name, self.reserved)
        while out in self.taken:
            out += "_"
        self.taken.add(out)
        return out


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """``TestIntPair`` → ``test_int_pair``; ``IRModule`` → ``ir_module``."""
    return _CAMEL.sub("_", sanitize(name)).lower().strip("_") or "_"
