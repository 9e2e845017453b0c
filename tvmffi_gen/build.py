"""``build_model``: a snapshot to the package model (``model.py``), in the order the naming rules
need: :meth:`Builder.declare <tvmffi_gen.builder.Builder.declare>` (modules, classes, functions),
then :meth:`Builder.build_classes <tvmffi_gen.builder.Builder.build_classes>` (class bodies,
parents before children so overrides can be checked), then :meth:`Builder.finish
<tvmffi_gen.builder.Builder.finish>`."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .builder import Builder
from .model import PackageModel, validate_package_name
from .snapshot import Snapshot
from .uses import UsedPackage

__all__ = ["build_model"]


def build_model(
    snap: Snapshot,
    name: str,
    prefixes: Iterable[str] = (),
    warn: Callable[[str], None] = lambda _m: None,
    used: Iterable[UsedPackage] = (),
) -> PackageModel:
    """Decide the whole package for ``snap``; ``used``: packages generated before for libraries
    this one extends (their classes become bases and annotations)."""
    validate_package_name(name)
    builder = Builder(snap, name, list(prefixes), warn, used)
    builder.declare()
    builder.build_classes()
    return builder.finish()
