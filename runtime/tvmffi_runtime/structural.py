"""Structural traversal helpers (walk / visit / map / mutate) over the library's own engine."""

from __future__ import annotations

__all__ = ["UNCHANGED", "Unchanged"]


class Unchanged:
    """Marker returned by structural mappers: the value was not changed."""

    _instance: Unchanged | None = None

    def __new__(cls) -> Unchanged:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()
