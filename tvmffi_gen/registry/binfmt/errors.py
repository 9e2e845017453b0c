"""The one error the binary readers raise."""

from __future__ import annotations

__all__ = ["BinaryFormatError"]


class BinaryFormatError(ValueError):
    """The file is not an ELF, Mach-O or PE library, or is malformed; the message names the file
    and what is wrong with it."""
