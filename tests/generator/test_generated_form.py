"""The generated form's runtime support (``tvmffi_runtime.bind``): fields bound by ``register``
(declared in a class's nested ``__fields`` class, or in its body as older packages have them),
registry fields, the API level check, dispatch bases, and parameter names from documentation.

Cases that register classes run in a child process (registering a type key replaces its class
for the whole process), on the compiled path and on pure ctypes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvmffi_gen.model.docparams import documented_param_names

from conftest import ROOT

GENERATED = ROOT / "generated"


def _run(code: str, pure: bool, path: Path = GENERATED) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(ROOT / "runtime")])}
    env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120
    )


PATHS = pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])


@PATHS
def test_package_refuses_an_older_runtime_naming_what_to_upgrade(pure: bool) -> None:
    proc = _run(
        """
        from tvmffi_runtime import bind
        bind.API_LEVEL = 5  # a runtime from before the generated form the package uses
        try:
            import tvmffi_testing
        except ImportError as exc:
            print(exc)
        else:
            raise SystemExit("imported")
        """,
        pure,
    )
    assert proc.returncode == 0, proc.stderr
    message = proc.stdout.strip()
    assert message.startswith("tvmffi_testing was generated for tvmffi-runtime API level 6"), message
    assert (
        "supports level 5" in message
        and "install the tvmffi-runtime distribution of the tvmffi-gen that generated it" in message
    )


@PATHS
def test_fields_are_bound_by_register_and_checked_against_the_library(pure: bool) -> None:
    proc = _run(
        """
        import typing as _t
        import tvmffi_runtime as _rt
        from tvmffi_runtime import bind as _bind
        import tvmffi_testing.testing as T

        # the generated class's fields are runtime descriptors named after their type key
        d = T.TestIntPair.__dict__["a"]
        assert not isinstance(d, _bind.UnboundField), d
        assert d.qualname == "testing.TestIntPair.a" and d.offset == 24, (d.qualname, d.offset)
        assert T.TestIntPair(3, 4).b == 4

        # an offset the library does not have: ImportError naming the field, before registering
        try:
            @_bind.register("testing.TestIntPair")
            class Stale(_rt.Object):
                __slots__ = ()
                a: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 24)
                b: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 40)
        except ImportError as exc:
            assert "field testing.TestIntPair.b moved (offset 32, generated for 40)" in str(exc), exc
        else:
            raise SystemExit("a moved field was accepted")
        assert type(T.TestIntPair(1, 2)) is T.TestIntPair  # the registration stayed

        # a field declared outside a registered class says what is missing
        class Loose(_rt.Object):
            __slots__ = ()
            x: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 24)
        assert isinstance(Loose.__dict__["x"], _bind.UnboundField)
        try:
            Loose.x.__get__(T.TestIntPair(1, 2))
        except TypeError as exc:
            assert "field Loose.x is not bound to a type: decorate Loose with" in str(exc), exc
        else:
            raise SystemExit("an unbound field was read")
        print("OK")
        """,
        pure,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "OK"


@PATHS
def test_register_moves_the_nested_field_declarations_onto_the_class(pure: bool) -> None:
    proc = _run(
        """
        import typing as _t
        import tvmffi_runtime as _rt
        from tvmffi_runtime import bind as _bind
        import tvmffi_testing.testing as T

        # the generated class's nested __fields class is gone; its fields are on the class
        assert not [a for a in dir(T.TestIntPair) if a.endswith("__fields")], dir(T.TestIntPair)
        assert T.TestIntPair._ffi_fields == (("a", "a"), ("b", "b")), T.TestIntPair._ffi_fields
        assert T.TestIntPair.__dict__["a"].qualname == "testing.TestIntPair.a"
        # and so are their annotations (records.fields() reads the types there)
        assert T.TestIntPair.__annotations__["a"] == "_t.Final[_bind.ReadOnlyField[int]]"
        assert [(f.name, f.type) for f in _rt.fields(T.TestIntPair)] == [("a", int), ("b", int)]
        derived = T.TestObjectDerived(v_map={}, v_array=[])
        assert (derived.v_i64, derived.v_f64) == (10, 10.0), (derived.v_i64, derived.v_f64)
        derived.v_i64 = 5
        assert derived.v_i64 == 5
        try:
            derived.v_f64 = 1.0
        except AttributeError as exc:
            assert str(exc) == "field testing.TestObjectBase.v_f64 is read-only", exc
        else:
            raise SystemExit("a read-only field was written")

        # nested declarations are checked against the library like those in a class body
        try:
            @_bind.register("testing.TestIntPair")
            class Stale(_rt.Object):
                __slots__ = ()

                class __fields:
                    a: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 24)
                    b: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 40)
        except ImportError as exc:
            assert "field testing.TestIntPair.b moved (offset 32, generated for 40)" in str(exc), exc
        else:
            raise SystemExit("a moved field was accepted")

        # an unbound nested declaration is named by the class that declares it
        @_bind.register("testing.TestIntPair")
        class Renamed(_rt.Object):
            __slots__ = ()

            class __fields:
                first: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 24, name="a")
                second: _t.Final[_bind.ReadOnlyField[int]] = _bind.registry_field(name="b")
        assert Renamed._ffi_fields == (("first", "a"), ("second", "b")), Renamed._ffi_fields
        assert Renamed.__dict__["second"].qualname == "testing.TestIntPair.b"
        assert "_Renamed__fields" not in vars(Renamed), vars(Renamed)
        print("OK")
        """,
        pure,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "OK"


def _fields_in_the_class_body(text: str) -> str:
    """A generated module as packages before the nested fields class had it: each class's field
    declarations (and their docstrings) in the class body itself."""
    out: list[str] = []
    nested = False
    for line in text.splitlines(keepends=True):
        if line.startswith("    class __fields:"):
            nested = True
            continue
        if nested and line.strip() and not line.startswith("        "):
            nested = False
        out.append(line[4:] if nested and line.strip() else line)
    return "".join(out)


@PATHS
def test_a_package_with_fields_in_the_class_body_still_works(pure: bool, tmp_path: Path) -> None:
    """Packages generated before the nested fields class (API level 5) declare fields in the
    class body: this runtime binds those too."""
    package = tmp_path / "tvmffi_testing"
    shutil.copytree(GENERATED / "tvmffi_testing", package)
    module = package / "testing" / "__init__.py"
    old = _fields_in_the_class_body(module.read_text())
    assert (
        "class __fields" not in old
        and '\n    v_f64: _t.Final[_bind.ReadOnlyField[float]] = _bind.field("f64", 32)\n' in old
    )
    module.write_text(old)
    lib = package / "_lib.py"
    lib.write_text(lib.read_text().replace("\nAPI_LEVEL = 6\n", "\nAPI_LEVEL = 5\n"))
    proc = _run(
        """
        import tvmffi_testing, tvmffi_testing.testing as T
        from tvmffi_runtime import bind as _bind

        print(tvmffi_testing.__file__)
        assert tvmffi_testing._lib.API_LEVEL == 5
        assert not isinstance(T.TestIntPair.__dict__["a"], _bind.UnboundField)
        assert T.TestIntPair._ffi_fields == (("a", "a"), ("b", "b")), T.TestIntPair._ffi_fields
        derived = T.TestObjectDerived(v_map={}, v_array=[])
        derived.v_i64 = 5
        assert (derived.v_i64, derived.v_f64, T.TestIntPair(3, 4).b) == (5, 10.0, 4)
        obj = T.SchemaAllTypes.make_with(1, 2.0, "s")
        obj.v_opt_int = 7
        assert obj.v_opt_int == 7
        print("OK")
        """,
        pure,
        path=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == [str(package / "__init__.py"), "OK"], proc.stdout


@PATHS
def test_registry_names_and_registry_fields(pure: bool) -> None:
    proc = _run(
        """
        import typing as _t
        import tvmffi_runtime as _rt
        from tvmffi_runtime import bind as _bind
        import tvmffi_testing.testing as T

        # name= binds an attribute to a registry field of another name (renamed Python names)
        @_bind.register("testing.TestIntPair")
        class Renamed(_rt.Object):
            __slots__ = ()
            first: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 24, name="a")
            second: _t.Final[_bind.ReadOnlyField[int]] = _bind.registry_field(name="b")
        pair = Renamed.__new__(Renamed)
        made = T.TestIntPair(5, 6)
        pair._h, pair._t = made._h, made._t
        made._h = 0
        assert (pair.first, pair.second) == (5, 6), (pair.first, pair.second)
        assert Renamed.__dict__["first"].qualname == "testing.TestIntPair.a"
        assert Renamed.__dict__["second"].qualname == "testing.TestIntPair.b"
        try:
            pair.second = 1
        except AttributeError as exc:
            assert str(exc) == "field testing.TestIntPair.b is read-only", exc
        else:
            raise SystemExit("a read-only registry field was written")

        # generated registry fields read and write through the registry's accessors
        obj = T.SchemaAllTypes.make_with(1, 2.0, "s")
        assert type(T.SchemaAllTypes.__dict__["v_opt_int"]) is _bind.RegistryField
        obj.v_opt_int = 7
        assert obj.v_opt_int == 7
        obj.v_opt_int = None
        assert obj.v_opt_int is None
        try:
            obj.v_opt_int = "x"
        except TypeError as exc:
            assert "testing.SchemaAllTypes.v_opt_int" in str(exc), exc
        else:
            raise SystemExit("a str was written to an optional int field")
        try:
            del obj.v_opt_int
        except AttributeError as exc:
            assert str(exc) == "field testing.SchemaAllTypes.v_opt_int cannot be deleted", exc
        else:
            raise SystemExit("a field was deleted")
        print("OK")
        """,
        pure,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "OK"


@PATHS
def test_declared_hooks_are_the_default_behaviour(pure: bool) -> None:
    # visitors.py declares hooks as one-line stubs; dispatch_base makes each the default, so a
    # subclass's super() call does what the engine does for an unmatched value
    proc = _run(
        """
        import inspect
        import tvmffi_runtime as _rt
        import tvmffi_testing.testing as T
        from tvmffi_testing.visitors import Mapper, Mutator, Visitor, Walker

        pair = T.TestIntPair(1, 2)
        assert Walker().walk_test_int_pair(pair) is None
        assert Mapper().map_test_int_pair(pair) is _rt.UNCHANGED
        assert getattr(Walker.walk_test_int_pair, "__structural_default__", False)
        sig = inspect.signature(Visitor.visit_test_int_pair)
        assert str(sig) == "(self, _node: '_ffi_ns_testing.TestIntPair', /) -> '_Visited'", sig
        assert Walker._hook_types["walk_test_int_pair"] is T.TestIntPair

        class Calls(Mutator):
            def __init__(self):
                self.seen = 0

            def mutate_test_int_pair(self, node):
                self.seen += 1
                return super().mutate_test_int_pair(node)

        m = Calls()
        out = _rt.structural_mutate(_rt.Array([pair, T.TestIntPair(3, 4)]), m)
        assert m.seen == 2 and [p.a for p in out] == [1, 3], (m.seen, list(out))

        class Counts(Visitor):
            def __init__(self):
                self.seen = 0

            def visit_test_int_pair(self, node):
                self.seen += 1
                return super().visit_test_int_pair(node)

        v = Counts()
        _rt.structural_visit(_rt.Array([pair]), v)
        assert v.seen == 1
        print("OK")
        """,
        pure,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "OK"


def test_documented_parameter_names() -> None:
    numpy_doc = """Write x + 1 into y.

    Parameters
    ----------
    x : Tensor
        1-D float32 CPU tensor (read).
    y : Tensor
        The output.

    Returns
    -------
    None
    """
    assert documented_param_names(textwrap.dedent(numpy_doc), 2) == ["x", "y"]
    google_doc = "Add.\n\nArgs:\n    a (int): first\n    b: second,\n        continued\n\nReturns:\n    sum"
    assert documented_param_names(google_doc, 2) == ["a", "b"]
    # only where reliable: the count must match, names must be plain and distinct
    assert documented_param_names(textwrap.dedent(numpy_doc), 3) is None
    assert documented_param_names("Args:\n    a: one\n    a: again", 2) is None
    assert documented_param_names("Args:\n    lambda: one", 1) is None
    assert documented_param_names("Args:\n    _x: one", 1) is None
    assert documented_param_names("Takes x and y.", 2) is None


def test_documented_names_reach_the_add_one_example() -> None:
    text = (ROOT / "examples" / "add_one" / "add_one_pkg" / "__init__.py").read_text()
    assert "def add_one_cpu(x: _rt.Tensor | _rt.DLPackExporter, y: _rt.Tensor | _rt.DLPackExporter)" in text
    assert '@_bind.exported_function("add_one_pkg._lib", "add_one_cpu")\ndef add_one_cpu(x' in text


# --------------------------------------------------------------------------------------------
# native functions: a generated def replaced by the function it declares (API level 3)
# --------------------------------------------------------------------------------------------
@PATHS
def test_a_native_function_keeps_what_its_def_offers(pure: bool) -> None:
    proc = _run(
        """
        import inspect, pickle, sys
        import tvmffi_testing.testing as t
        from tvmffi_runtime import bind

        # the signature, names and docs of the def
        print(inspect.signature(t.add_one), t.add_one.__name__, t.add_one.__doc__)
        print(inspect.isroutine(t.add_one), t.add_one.__module__)
        # a method binds as a def does; static methods stay unbound
        pair = t.TestIntPair(1, 2)
        print(pair.sum(), t.TestIntPair.sum(pair), inspect.signature(pair.sum))
        # arity errors in Python's words, before any native call
        for call in (lambda: t.add_one(), lambda: t.add_one(1, 2), lambda: pair.sum(1)):
            try:
                call()
            except TypeError as exc:
                print(exc)
        # positional-only parameters take no keywords
        try:
            t.add_one(_0=1)
        except TypeError as exc:
            print(exc)
        # pickled by reference, as a def is
        print(pickle.loads(pickle.dumps(t.add_one)) is t.add_one)

        # keyword-capable parameters (a schema that names them) bind by name
        @bind.registry_function("testing.add_one")
        def named(x: int) -> int:
            ...
        print(named(x=4), named(5))
        try:
            named(y=1)
        except TypeError as exc:
            print(exc)
        try:
            @bind.registry_function("testing.add_one")
            def defaulted(x: int = 1) -> int:
                ...
        except TypeError as exc:
            print(exc)
        """,
        pure,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "(_0: '_t.SupportsIndex', /) -> 'int' add_one Registered as `testing.add_one`.",
        "True tvmffi_testing.testing",
        "3 3 () -> 'int'",
        "add_one() takes 1 positional argument but 0 were given",
        "add_one() takes 1 positional argument but 2 were given",
        "TestIntPair.sum() takes 1 positional argument but 2 were given",
        "add_one() takes no keyword arguments",
        "True",
        "5 6",
        "named(): missing a required argument: 'x'",
        "__main__.defaulted: a native function takes no defaults or keyword-only parameters",
    ]


@PATHS
def test_construction_adopts_the_result_and_a_second_init_releases_the_first(pure: bool) -> None:
    proc = _run(
        """
        import tvmffi_runtime as rt
        import tvmffi_testing.testing as t

        pair = t.TestIntPair(1, 2)
        held = rt.Array([pair])  # a second owner of the first native object
        print(t.object_use_count(held[0]))
        pair.__init__(3, 4)  # now owns a new object; its reference to the first is released
        print(pair.a, pair.b, held[0].a, t.object_use_count(held[0]))
        auto = t.TestCxxAutoInit(1, c=3)
        print(auto.a, auto.c, auto.d)
        """,
        pure,
    )
    assert proc.returncode == 0, proc.stderr
    # held[0] makes a temporary wrapper: one more reference while it is counted
    assert proc.stdout.split() == ["3", "3", "4", "1", "2", "1", "3", "99"]
