"""What the runtime uses that an older ``libtvm_ffi`` lacks, and the error when it is missing.

The runtime runs on ``libtvm_ffi`` from apache-tvm-ffi 0.1.12 on (``OLDEST_SUPPORTED``; packages
pin it: tilelang 0.1.15 ``<0.1.13``, k-dash ``==0.1.12``). What a later release added is bound
when first used, not at import: the C functions by ``_lib.optional_proto``, the registry's global
functions by ``_call.global_func``. A library without one fails only the feature that needs it,
with :class:`FeatureUnavailableError` naming the feature and the first release that has it.
``docs/versions.md`` lists the same table for readers; ``tests/runtime/test_old_tvm_ffi.py``
checks it against the releases themselves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "OLDEST_SUPPORTED",
    "BIG_INT",
    "STRUCTURAL_WALK",
    "STRUCTURAL_VISIT",
    "STRUCTURAL_MUTATE",
    "Feature",
    "FeatureUnavailableError",
    "feature_of",
    "installed_release",
    "needed_by",
]

#: The oldest apache-tvm-ffi release the runtime supports (both distributions' metadata say so).
OLDEST_SUPPORTED = "0.1.12"


@dataclass(frozen=True)
class Feature:
    """A part of the runtime that needs something a release after ``OLDEST_SUPPORTED`` added."""

    #: what a user calls, as the error names it
    name: str
    #: the first apache-tvm-ffi release that has it
    since: str


BIG_INT = Feature("integers outside the int64 range (ffi.BigInt)", "0.1.14")
STRUCTURAL_WALK = Feature("structural_walk and WalkerBase (ffi.StructuralWalk)", "0.1.13")
STRUCTURAL_VISIT = Feature("structural_visit and VisitorBase (ffi.StructuralVisit)", "0.1.14")
STRUCTURAL_MUTATE = Feature(
    "structural_map, structural_mutate, MapperBase and MutatorBase (ffi.StructuralMap, ffi.StructuralMutate)", "0.1.14"
)

#: C function -> the feature that needs it (every other C function the runtime binds is in every
#: supported release)
_SYMBOLS: dict[str, Feature] = {
    "TVMFFIBigIntFromByteArray": BIG_INT,
    "TVMFFIBigIntGetContentByteArray": BIG_INT,
}
#: global function -> the feature that needs it (the same: the others are in every release)
_FUNCTIONS: dict[str, Feature] = {
    "ffi.StructuralWalk": STRUCTURAL_WALK,
    "ffi.StructuralVisitorVisit": STRUCTURAL_WALK,
    "ffi.StructuralVisitorDefRegionKind": STRUCTURAL_WALK,
    "ffi.StructuralVisitorWithDefRegionKind": STRUCTURAL_WALK,
    "ffi.VisitInterrupt": STRUCTURAL_WALK,
    "ffi.StructuralVisit": STRUCTURAL_VISIT,
    "ffi.StructuralVisitorDefaultVisit": STRUCTURAL_VISIT,
    "ffi.StructuralMap": STRUCTURAL_MUTATE,
    "ffi.StructuralMutate": STRUCTURAL_MUTATE,
    "ffi.StructuralMutatorMutate": STRUCTURAL_MUTATE,
    "ffi.StructuralMutatorDefaultMutate": STRUCTURAL_MUTATE,
    "ffi.StructuralMutatorVarRemapGet": STRUCTURAL_MUTATE,
    "ffi.StructuralMutatorVarRemapSet": STRUCTURAL_MUTATE,
    "ffi.StructuralMutatorDefRegionKind": STRUCTURAL_MUTATE,
    "ffi.StructuralMutatorWithDefRegionKind": STRUCTURAL_MUTATE,
}


def feature_of(name: str) -> Feature | None:
    """The feature that needs the C function or global function ``name``, or None when every
    supported release has it."""
    return _SYMBOLS.get(name) or _FUNCTIONS.get(name)


def needed_by(feature: Feature) -> tuple[list[str], list[str]]:
    """(the C functions, the global functions) ``feature`` needs."""
    return (
        [name for name, f in _SYMBOLS.items() if f == feature],
        [name for name, f in _FUNCTIONS.items() if f == feature],
    )


class FeatureUnavailableError(NotImplementedError):
    """The loaded ``libtvm_ffi`` is older than a feature that was used.

    ``feature`` is what was used, ``missing`` the C symbol or global function the library lacks,
    ``library`` the loaded file and ``release`` its apache-tvm-ffi version (None when the file
    is not the installed distribution's). The rest of the runtime works on that library.
    """

    def __init__(self, feature: Feature, missing: str, library: str, release: str | None) -> None:
        self.feature = feature
        self.missing = missing
        self.library = library
        self.release = release
        loaded = f"apache-tvm-ffi {release}'s {library}" if release else library
        kind = "C function" if missing in _SYMBOLS else "global function"
        super().__init__(
            f"{feature.name}: needs apache-tvm-ffi {feature.since} or newer; the loaded libtvm_ffi"
            f" ({loaded}) has no {kind} {missing}"
        )


def installed_release(library: str) -> str | None:
    """The version of the installed apache-tvm-ffi distribution when ``library`` is its own
    ``libtvm_ffi`` (the library's own version number does not tell releases apart: 0.1.13.post2
    and 0.1.14.post0 both report 0.1.14), else None."""
    from importlib import metadata

    try:
        dist = metadata.distribution("apache-tvm-ffi")
    except metadata.PackageNotFoundError:
        return None
    target = os.path.realpath(library)
    for entry in dist.files or ():
        same_name = os.path.basename(str(entry)) == os.path.basename(target)
        if same_name and os.path.realpath(str(dist.locate_file(entry))) == target:
            return dist.version
    return None
