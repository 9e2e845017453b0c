"""``--prefix NS``: which registry names a run keeps.

One rule, read by the model builder (what it generates) and by the command line (what it counts):
a name is kept when no prefix is given, when it is a prefix (``--prefix testing.TestIntPair``
keeps that one type), or when it lies under one (``--prefix testing`` keeps ``testing.X`` and
``testing.sub.Y``, not ``testingx.Z``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["kept_by_prefixes"]


def kept_by_prefixes(name: str, prefixes: Sequence[str]) -> bool:
    """Whether the registry name ``name`` (a type key or a global function's name) is kept."""
    if not prefixes:
        return True
    return any(name == p.rstrip(".") or name.startswith(p.rstrip(".") + ".") for p in prefixes)
