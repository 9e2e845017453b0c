"""What a parameter of a registry type accepts, or a read of it gives, beyond the type itself.

A package's C++ may convert values at the FFI boundary that the registry's schemas do not
describe: Apache TVM turns a Python number into an ``IntImm`` / ``FloatImm`` where an ``ir.Expr``
is expected. ``Conversions`` holds, per type key, the extra annotation members the stubs add
where a schema names that type (``resolve.StubContext``): ``accepted`` in parameters (at every
depth: ``Sequence[Expr | int | float]``), ``returned`` in fields and results.

``BUILTIN`` is Apache TVM's (each entry checked at run time with apache-tvm 0.27). A user adds
their own package's with a JSON file named in ``$TVMFFI_GEN_STUB_CONVERSIONS`` (several
separated by ``os.pathsep``), of the same shape::

    {"accepted": {"mypkg.Expr": ["int", "float"]}, "returned": {"mypkg.Loc": ["None"]}}

Members are annotation text as the stubs write it: a builtin (``int``, ``str``), ``None``, or a
name under ``_tvm_ffi.`` (``_tvm_ffi.dtype``), ``_t.`` (typing) or ``_abc.`` (collections.abc),
which every stub module that uses registry types imports. The files' entries are added to the
built-in ones, key by key, in order.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from .errors import StubsError

__all__ = ["Conversions", "BUILTIN", "ENV_VAR", "load_conversions"]

ENV_VAR = "TVMFFI_GEN_STUB_CONVERSIONS"


@dataclass(frozen=True)
class Conversions:
    #: type key -> what a parameter of that type also accepts
    accepted: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: type key -> what reading a value of that type can also give
    returned: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def merged(self, other: Conversions) -> Conversions:
        """These entries with ``other``'s added, key by key (a member already there once)."""

        def merge(a: dict[str, tuple[str, ...]], b: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
            out = dict(a)
            for key, extra in b.items():
                out[key] = tuple(dict.fromkeys([*out.get(key, ()), *extra]))
            return out

        return Conversions(merge(self.accepted, other.accepted), merge(self.returned, other.returned))

    def to_json(self) -> str:
        return json.dumps({"accepted": self.accepted, "returned": self.returned}, sort_keys=True)


#: Apache TVM's: a Python number becomes an ``IntImm`` / ``FloatImm`` where an ``ir.Expr`` is
#: expected (``prim._cast("float32", 1, None)``, an Array's elements alike), a dtype string or a
#: ``tvm_ffi.dtype`` a ``PrimType``, and a ``Span`` is a nullable reference (None: no source
#: location, what tvm's own wrappers pass; every node built without one reads its span as None).
#: Other object types refuse what is not one of them (``ir.Type``, ``ir.Var`` or
#: ``target.Target`` given a string).
BUILTIN = Conversions(
    accepted={"ir.Expr": ("int", "float"), "ir.PrimType": ("str", "_tvm_ffi.dtype"), "ir.Span": ("None",)},
    returned={"ir.Span": ("None",)},
)

_MEMBER = re.compile(r"None|[A-Za-z_]\w*|_(tvm_ffi|t|abc)\.[A-Za-z_]\w*")


def _read(path: str) -> Conversions:
    """One user file (see the module's doc); a StubsError names the file and what is wrong."""
    try:
        raw: object = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StubsError(f"{ENV_VAR}: {path}: not a readable JSON file ({exc})") from None
    if not isinstance(raw, dict) or not set(cast("dict[object, object]", raw)) <= {"accepted", "returned"}:
        raise StubsError(f'{ENV_VAR}: {path}: expected an object with "accepted" and/or "returned"')
    parts = cast("dict[str, object]", raw)
    tables: dict[str, dict[str, tuple[str, ...]]] = {}
    for part in ("accepted", "returned"):
        table = parts.get(part, {})
        if not isinstance(table, dict):
            raise StubsError(f"{ENV_VAR}: {path}: {part!r} is not an object of type key -> list of annotations")
        tables[part] = {}
        for key, members in cast("dict[str, object]", table).items():
            if not isinstance(members, list) or not all(
                isinstance(m, str) and _MEMBER.fullmatch(m) for m in cast("list[object]", members)
            ):
                raise StubsError(
                    f"{ENV_VAR}: {path}: {part}[{key!r}]: expected a list of annotations such as"
                    ' "int", "None" or "_tvm_ffi.dtype"'
                )
            tables[part][key] = tuple(cast("list[str]", members))
    return Conversions(tables["accepted"], tables["returned"])


def load_conversions() -> Conversions:
    """``BUILTIN`` with the entries of every file ``$TVMFFI_GEN_STUB_CONVERSIONS`` names."""
    out = BUILTIN
    for path in filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep)):
        out = out.merged(_read(path))
    return out
