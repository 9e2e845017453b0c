"""The ctypes mirrors in ``tvmffi_runtime._lib`` match the C headers they copy.

A C program compiled against the installed package's headers prints sizeof / _Alignof of each
mirrored struct and offsetof / sizeof of each member; the test compares them with ctypes.
"""

from __future__ import annotations

import ctypes
import subprocess

import pytest

from tvmffi_runtime import _lib

from conftest import build_executable

#: Every struct the runtime mirrors. A struct added to _lib must be added here (and so checked).
MIRRORED = [
    "TVMFFIAny",
    "TVMFFIObject",
    "TVMFFIByteArray",
    "TVMFFISeqCell",
    "TVMFFIShapeCell",
    "TVMFFIErrorCell",
    "TVMFFIFieldInfo",
    "TVMFFIMethodInfo",
    "TVMFFITypeMetadata",
    "TVMFFITypeInfo",
    "TVMFFITypeAttrColumn",
    "DLDataType",
    "DLDevice",
    "DLTensor",
    "DLManagedTensor",
    "DLPackVersion",
    "DLManagedTensorVersioned",
    "TVMFFIVersion",
]

#: ctypes field name -> C member name, where the mirror spells it differently.
RENAMED = {
    ("TVMFFIAny", "small_len"): "small_str_len",
    ("TVMFFIObject", "padding"): "__padding",
}


def _members(struct: type[ctypes.Structure]) -> list[tuple[str, str]]:
    """(ctypes attribute, C member) pairs; anonymous unions are expanded to their members."""
    anonymous = set(getattr(struct, "_anonymous_", ()))
    out = []
    for field in struct._fields_:
        name, ftype = field[0], field[1]
        if name in anonymous:
            out.extend((sub[0], sub[0]) for sub in ftype._fields_)
        else:
            out.append((name, RENAMED.get((struct.__name__, name), name)))
    return out


def _c_program() -> str:
    lines = [
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <tvm/ffi/c_api.h>",
        "#include <dlpack/dlpack.h>",
        '#define MEMBER(T, m) printf("FIELD %s.%s %zu %zu\\n", #T, #m, offsetof(T, m), sizeof(((T*)0)->m))',
        "int main(void) {",
    ]
    for name in MIRRORED:
        lines.append(f'  printf("STRUCT {name} %zu %zu\\n", sizeof({name}), _Alignof({name}));')
        for _, member in _members(getattr(_lib, name)):
            lines.append(f"  MEMBER({name}, {member});")
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def c_layout() -> dict[str, tuple[int, int]]:
    exe = build_executable("abi_layout", _c_program())
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    layout = {}
    for line in out.splitlines():
        kind, key, a, b = line.split()
        layout[("" if kind == "STRUCT" else "field:") + key] = (int(a), int(b))
    return layout


def test_every_mirrored_struct_is_checked():
    defined = {
        name
        for name, value in vars(_lib).items()
        if isinstance(value, type)
        and issubclass(value, ctypes.Structure)
        and value.__module__ == _lib.__name__
        and not name.startswith("_")
    }
    assert defined == set(MIRRORED) | set(BY_VALUE), f"add new mirrors to MIRRORED: {defined ^ set(MIRRORED)}"


#: Structs that restate a mirrored one for ctypes by-value passing (no union): name -> (the
#: mirror it restates, its field -> the mirror's field).
BY_VALUE = {
    "TVMFFIAnyByValue": ("TVMFFIAny", {"type_index": "type_index", "zero_padding": "small_len", "v": "u"}),
}


@pytest.mark.parametrize("name", BY_VALUE)
def test_by_value_restatements_match_their_mirror(name):
    mirror_name, fields = BY_VALUE[name]
    struct, mirror = getattr(_lib, name), getattr(_lib, mirror_name)
    assert ctypes.sizeof(struct) == ctypes.sizeof(mirror)
    assert ctypes.alignment(struct) == ctypes.alignment(mirror)
    assert [f[0] for f in struct._fields_] == list(fields)
    for attr, mirror_attr in fields.items():
        ours, theirs = getattr(struct, attr), getattr(mirror, mirror_attr)
        assert (ours.offset, ours.size) == (theirs.offset, theirs.size), f"{name}.{attr} vs {mirror_name}.{mirror_attr}"


@pytest.mark.parametrize("name", MIRRORED)
def test_struct_size_and_alignment(c_layout, name):
    struct = getattr(_lib, name)
    c_size, c_align = c_layout[name]
    assert ctypes.sizeof(struct) == c_size, f"sizeof({name})"
    assert ctypes.alignment(struct) == c_align, f"_Alignof({name})"


@pytest.mark.parametrize("name", MIRRORED)
def test_member_offsets_and_sizes(c_layout, name):
    struct = getattr(_lib, name)
    mismatches = []
    for attr, member in _members(struct):
        field = getattr(struct, attr)
        c_offset, c_size = c_layout[f"field:{name}.{member}"]
        if (field.offset, field.size) != (c_offset, c_size):
            mismatches.append(f"{name}.{attr}: ctypes offset {field.offset} size {field.size}, C {c_offset} {c_size}")
    assert not mismatches, "\n".join(mismatches)


def test_header_and_any_sizes_used_by_the_runtime():
    assert _lib.OBJECT_HEADER_SIZE == ctypes.sizeof(_lib.TVMFFIObject) == 24
    assert _lib.ANY_SIZE == ctypes.sizeof(_lib.TVMFFIAny) == 16
    assert _lib.ANY_INT.size == _lib.ANY_UINT.size == _lib.ANY_FLOAT.size == 16
