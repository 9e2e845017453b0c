"""The one error of ``--stubs-for``: ``StubsError``, raised by the step that cannot go on (the
package name is not one, importing it fails or registers nothing, stubgen or the self-check
fails), its message naming the package or file at fault and ``detail`` holding the child's
stderr when there is one. Every other module of ``stubs`` that raises imports it from here.
"""

from __future__ import annotations

__all__ = ["StubsError"]


class StubsError(RuntimeError):
    """The package cannot be stubbed; the message names it and the reason."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail
