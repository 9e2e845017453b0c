"""_pure/lazy_function.py: ``LazyFunction``, what generated functions and methods are: a
Function resolved on first call, then called directly (the twin of
``_accel_parts/lazy_function.h``)."""

from __future__ import annotations

import ctypes
import types
from collections.abc import Callable
from typing import Any

from .._errors import arity_error, no_keywords_error
from .._values import TypeIndex
from .calls import call
from .objects import ObjectBase

__all__ = ["LazyFunction"]


class LazyFunction:
    """``LazyFunction(name, resolver, kwbind=None, arity=-1)``: ``resolver()`` gives the Function
    on first call, or (Function, views), where bit i of ``views`` marks a parameter that takes a
    borrowed ``DLTensor*`` (the compiled twin lends a producer's DLTensor there; here every
    tensor argument is a Tensor, which such a parameter takes as well); ``kwbind(*args,
    **kwargs)`` puts keyword arguments in order (None: none are taken); ``arity`` is the number
    of positional arguments (-1: any). A method when it is a class attribute, as a def is;
    pickled by its ``__qualname__``."""

    __slots__ = ("name", "arity", "_resolver", "_kwbind", "_function", "_c", "_release_gil", "__dict__")

    def __init__(
        self, name: str, resolver: Callable[[], Any], kwbind: Callable[..., tuple[object, ...]] | None = None,
        arity: int = -1,
    ) -> None:  # fmt: skip
        if arity < -1:
            raise ValueError("LazyFunction: arity must be -1 (any) or a count")
        self.name = name
        self.arity = arity
        self._resolver = resolver
        self._kwbind = kwbind
        self._function: Any = None
        self._c: ctypes.c_void_p | None = None
        self._release_gil = True

    @property
    def release_gil(self) -> bool:
        """False: calls keep the GIL whatever the policy, on the compiled path; ctypes releases
        it on every call regardless (``_call.keep_gil`` sets it)."""
        return self._release_gil

    @release_gil.setter
    def release_gil(self, value: bool) -> None:
        if not isinstance(value, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"{self.name!r}: release_gil must be True or False")
        self._release_gil = value

    def _resolve(self) -> ctypes.c_void_p:
        f = self._resolver()
        if isinstance(f, tuple):  # (Function, views): ctypes makes each argument a Tensor anyway
            if len(f) != 2 or not isinstance(f[1], int):  # pyright: ignore[reportUnknownArgumentType]
                raise TypeError(f"resolving {self.name!r} gave a tuple that is not (Function, views)")
            f = f[0]  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(f, ObjectBase) or not f._h or f._t != TypeIndex.FUNCTION:
            raise TypeError(f"resolving {self.name!r} did not give a Function")
        if self._c is None:  # another thread may have resolved it meanwhile: keep the first
            self._function, self._c = f, ctypes.c_void_p(f._h)
        return self._c

    @property
    def function(self) -> Any:
        """The resolved Function (resolves it)."""
        if self._c is None:
            self._resolve()
        return self._function

    def _display_name(self) -> str:
        q = self.__dict__.get("__qualname__")
        return q if isinstance(q, str) else self.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            if self._kwbind is None:
                raise no_keywords_error(self._display_name())
            args = self._kwbind(*args, **kwargs)
            if type(args) is not tuple:
                raise TypeError(f"the keyword binder of {self.name!r} returned {type(args).__name__}, not a tuple")
        if self.arity >= 0 and len(args) != self.arity:
            raise arity_error(self._display_name(), self.arity, len(args))
        c = self._c
        if c is None:
            c = self._resolve()
        return call(c, args, self.name)

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        # a class attribute is a method, as a def is
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        state = "" if self._c is not None else " (unresolved)"
        shown = self._display_name()
        return f"<function {self.name}{state}>" if shown == self.name else f"<function {shown} ({self.name}){state}>"

    def __reduce__(self) -> str:
        q = self.__dict__.get("__qualname__")
        if not isinstance(q, str):
            raise TypeError(f"cannot pickle the function handle {self.name!r} (not a named wrapper)")
        return q
