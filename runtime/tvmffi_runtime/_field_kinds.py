"""The one table of field layouts: how a reflected field is read from and written to object memory.

Every user of the kinds takes them from here: the pure backend's descriptor
(``_pure/fields.py``), the compiled one (``_accel_parts/fields.h`` includes ``field_kinds.h``,
which ``runtime/setup.py`` writes from :func:`c_header` at build time) and the generator, which
picks a kind for each field by :data:`POD_LAYOUTS` (and reads its flags by :class:`FieldFlag`)
and loads this file without importing the runtime (which would load libtvm_ffi). So it imports
nothing but the standard library.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["FIELD_KINDS", "IN_PLACE_FIELD_KINDS", "POD_LAYOUTS", "FieldFlag", "FieldKind", "c_header"]


class FieldFlag:
    """Bits of ``TVMFFIFieldInfo.flags`` (``TVMFFIFieldFlagBitMask``)."""

    WRITABLE = 1 << 0
    HAS_DEFAULT = 1 << 1
    IS_STATIC_METHOD = 1 << 2
    SEQ_HASH_IGNORE = 1 << 3
    SEQ_HASH_DEF_PATTERN = 1 << 4
    DEFAULT_FROM_FACTORY = 1 << 5
    REPR_OFF = 1 << 6
    COMPARE_OFF = 1 << 7
    HASH_OFF = 1 << 8
    INIT_OFF = 1 << 9
    KW_ONLY = 1 << 10
    SETTER_IS_FUNCTION_OBJ = 1 << 11
    SEQ_HASH_DEF_SIMPLE = 1 << 12


#: A POD (``i64``, ``i32``, ``f64``, ``f32``, ``bool``), an ObjectRef (``object``: one pointer,
#: null for None) or a value laid out as a TVMFFIAny (``any``: String, Bytes, Any).
FieldKind = Literal["i64", "i32", "f64", "f32", "bool", "object", "any"]

#: Every kind, in the compiled backend's numbering (``F_I64`` is 0, ...).
FIELD_KINDS: tuple[FieldKind, ...] = get_args(FieldKind)

#: The kinds the runtime writes in object memory itself; a field of another kind is written
#: through the registry's setter.
IN_PLACE_FIELD_KINDS: tuple[FieldKind, ...] = ("i64", "f64", "bool")

#: The POD kinds by (static type index, size in bytes, schema type) of a reflected field.
POD_LAYOUTS: dict[tuple[int, int, str], FieldKind] = {
    (1, 8, "int"): "i64",
    (1, 4, "int"): "i32",
    (3, 8, "float"): "f64",
    (3, 4, "float"): "f32",
    (2, 1, "bool"): "bool",
}


def c_header() -> str:
    """The table in C (``_accel_parts/field_kinds.h``): the ``F_*`` enum, the names indexed by
    it, and which are written in place."""
    enum = ", ".join(f"F_{kind.upper()}" for kind in FIELD_KINDS)
    names = ", ".join(f'"{kind}"' for kind in FIELD_KINDS)
    in_place = ", ".join("1" if kind in IN_PLACE_FIELD_KINDS else "0" for kind in FIELD_KINDS)
    return (
        "/* Written by runtime/setup.py from tvmffi_runtime/_field_kinds.py (the one table of field\n"
        "   layouts) at build time: edit that table, not this file. */\n"
        f"enum {{ {enum} }};\n"
        f"static const char* field_kinds[] = {{{names}, NULL}};\n"
        f"static const char field_kind_in_place[] = {{{in_place}}};\n"
    )
