"""Object ownership, identity and class dispatch; Function creation, lookup and registration."""

from __future__ import annotations

import gc
import uuid

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _callback, _object


@pytest.fixture(scope="module")
def g(testing_lib):
    return rt.get_global_func


@pytest.fixture(scope="module")
def use_count(testing_lib):
    return rt.get_global_func("testing.object_use_count")


@pytest.fixture(scope="module")
def echo(testing_lib):
    return rt.get_global_func("testing.echo")


@pytest.fixture(scope="module")
def make_pair(testing_lib):
    return rt.Function.from_type_key_method("testing.TestIntPair", "__ffi_init__")


@pytest.fixture(scope="module")
def registered_base(testing_lib):
    """A Python class registered for ``testing.TestObjectBase``.

    ``register_object`` is process-global: register once for this module and put back whatever
    class was registered before, so other test modules see the registry they expect.
    """
    index = rt.type_key_to_index("testing.TestObjectBase")
    previous = _object._TYPE_CLASSES.get(index)
    # A generated package imported earlier in the session may have registered classes for the
    # testing types (and a lazy loader): set them aside while this module runs.
    saved_classes = dict(_object._TYPE_CLASSES)
    saved_loader = _object._LAZY_CLASS_LOADER[0]
    for key in ("testing.TestObjectDerived", "testing.TestUnregisteredObject", "testing.TestUnregisteredBaseObject"):
        _object._TYPE_CLASSES.pop(rt.type_key_to_index(key), None)
    _object._LAZY_CLASS_LOADER[0] = None
    _object._CLASS_CACHE.clear()

    @rt.register_object("testing.TestObjectBase")
    class TestObjectBase(rt.Object):
        __slots__ = ()

        def add(self, other: int) -> int:
            return rt.Function.from_type_method(self.type_index, "add_i64")(self, other)

    yield TestObjectBase
    _object._TYPE_CLASSES.clear()
    _object._TYPE_CLASSES.update(saved_classes)
    _object._LAZY_CLASS_LOADER[0] = saved_loader
    if previous is None:
        _object._TYPE_CLASSES.pop(index, None)
    else:
        _object._TYPE_CLASSES[index] = previous
    _object._CLASS_CACHE.clear()


# --------------------------------------------------------------------------------------------
# Reference counting: each wrapper owns exactly one reference
# --------------------------------------------------------------------------------------------
def test_new_object_has_one_reference(make_pair, use_count):
    pair = make_pair(1, 2)
    assert use_count(pair) == 1


def test_passing_an_object_borrows(make_pair, use_count, g):
    pair = make_pair(1, 2)
    nop = g("testing.nop")
    for _ in range(10):
        nop(pair)
        nop(pair, pair, [pair])
    assert use_count(pair) == 1


def test_returned_wrapper_owns_one_reference(make_pair, use_count, echo):
    pair = make_pair(1, 2)
    back = echo(pair)
    assert back is not pair and back.same_as(pair)
    assert use_count(pair) == 2
    more = [echo(pair) for _ in range(5)]
    assert use_count(pair) == 7
    del back
    assert use_count(pair) == 6
    del more
    assert use_count(pair) == 1


def test_storing_in_containers_adds_one_reference_each(make_pair, use_count):
    pair = make_pair(1, 2)
    arr = rt.Array([pair, pair, pair])
    assert use_count(pair) == 4
    item = arr[1]
    assert use_count(pair) == 5
    del item
    items = list(arr)  # three wrappers
    assert use_count(pair) == 7
    del items
    m = rt.Map({"k": pair})
    d = rt.Dict({"k": pair})
    lst = rt.List([pair])
    assert use_count(pair) == 7
    lst.append(pair)
    assert use_count(pair) == 8
    assert lst.pop().same_as(pair)
    assert use_count(pair) == 7
    del d["k"]
    assert use_count(pair) == 6
    del arr, m, lst, d
    gc.collect()
    assert use_count(pair) == 1


def test_python_containers_converted_for_a_call_are_released(make_pair, use_count, echo):
    pair = make_pair(1, 2)
    echo([pair, {"k": pair}])  # result dropped immediately
    assert use_count(pair) == 1
    kept = echo([pair, (pair,), {"k": pair}])
    assert use_count(pair) == 4
    del kept
    assert use_count(pair) == 1


def test_callback_argument_wrappers_are_released(make_pair, use_count, g):
    pair = make_pair(1, 2)
    seen = []

    def callback(obj):
        seen.append(use_count(obj))  # caller's + callback's wrapper (+ the native view borrows)
        return obj

    out = g("testing.apply")(callback, pair)
    assert out.same_as(pair)
    assert seen[0] >= 2
    del out
    assert use_count(pair) == 1


def test_dropping_the_last_wrapper_frees_the_object(make_pair, use_count):
    pair = make_pair(1, 2)
    arr = rt.Array([pair])
    del pair
    gc.collect()
    assert use_count(arr[0]) == 2  # the array's reference and the temporary wrapper


# --------------------------------------------------------------------------------------------
# Identity, hashing, type information, repr
# --------------------------------------------------------------------------------------------
def test_identity_equality_and_hash(make_pair, echo):
    a = make_pair(1, 2)
    a2 = echo(a)
    b = make_pair(1, 2)  # same content, different object
    assert a.same_as(a2) and a == a2 and not (a != a2)  # noqa: SIM202 - __ne__ itself
    assert hash(a) == hash(a2)
    assert not a.same_as(b) and a != b
    assert not a.same_as("not an object") and a != 1
    assert len({a, a2, b}) == 2
    assert {a: "x"}[a2] == "x"
    assert a.handle == a2.handle != b.handle


def test_type_key_and_index(make_pair, g):
    pair = make_pair(1, 2)
    assert pair.type_key == "testing.TestIntPair"
    assert pair.type_index == rt.type_key_to_index("testing.TestIntPair")
    assert pair.type_index >= rt.TypeIndex.DYN_OBJECT_BEGIN
    assert rt.type_key_to_index("no.such.TypeKey") is None
    assert rt.Array([]).type_key == "ffi.Array" and rt.Array([]).type_index == rt.TypeIndex.ARRAY
    assert g("testing.add_one").type_key == "ffi.Function"


def test_repr_goes_through_the_library_printer(make_pair, g):
    assert repr(make_pair(1, 2)) == "testing.TestIntPair(a=1, b=2)"
    assert "v_i64=41" not in repr(g("testing.make_unregistered_object")())
    assert "testing.TestUnregisteredObject" in repr(g("testing.make_unregistered_object")())


def test_objects_pickle_through_their_json_graph(make_pair, g):
    import pickle

    back = pickle.loads(pickle.dumps(make_pair(1, 2)))
    assert repr(back) == "testing.TestIntPair(a=1, b=2)"
    with pytest.raises(TypeError, match=r"ffi\.Function objects cannot be pickled"):
        pickle.dumps(g("testing.nop"))


def test_unregistered_type_comes_back_as_object(g):
    obj = g("testing.make_unregistered_object")()
    # rt.Object, unless a generated package in this test session registered a class for it
    registered = _object._TYPE_CLASSES.get(obj.type_index)
    assert type(obj) is (registered or rt.Object)
    assert registered is not None or type(obj) is rt.Object
    assert obj.type_key == "testing.TestUnregisteredObject"


def test_builtin_types_come_back_as_their_classes(echo):
    assert type(echo(rt.Array([1]))) is rt.Array
    assert type(echo(rt.get_global_func("testing.nop"))) is rt.Function
    assert rt.class_for_index(rt.TypeIndex.MAP) is rt.Map


def test_most_derived_registered_class(registered_base, echo, g):
    derived = rt.Function.from_type_key_method("testing.TestObjectDerived", "__ffi_init__")({"k": 1}, [1, 2])
    assert derived.type_key == "testing.TestObjectDerived"
    assert type(derived) is registered_base  # derived type, nearest registered ancestor
    back = echo(derived)
    assert type(back) is registered_base and back.same_as(derived)
    assert back.add(5) == 15  # v_i64 defaults to 10
    assert rt.class_for_index(derived.type_index) is registered_base
    # an unrelated type is not affected
    assert type(g("testing.make_unregistered_object")()) is rt.Object


def test_registered_class_constructs_through_ffi_init(registered_base):
    from tvmffi_runtime import reflection

    obj = registered_base(v_i64=3, v_str="set by keyword")  # auto-generated __ffi_init__
    assert type(obj) is registered_base and obj.type_key == "testing.TestObjectBase"
    assert reflection.get_field(obj, "v_i64") == 3
    assert reflection.get_field(obj, "v_str") == "set by keyword"
    assert obj.add(1) == 4
    positional = registered_base(7, 1.5, "p")
    assert reflection.get_field(positional, "v_f64") == 1.5


def test_register_object_rejects_unknown_type_key():
    with pytest.raises(TypeError, match=r"no\.such\.Type"):

        @rt.register_object("no.such.Type")
        class Nope(rt.Object):
            pass


def test_plain_object_cannot_be_constructed():
    with pytest.raises(TypeError):
        rt.Object()
    with pytest.raises(TypeError):
        rt.Function()


# --------------------------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------------------------
def test_calling_global_functions(g):
    assert g("testing.add_one")(41) == 42
    assert g("testing.nop")() is None
    assert isinstance(g("testing.add_one"), rt.Function)


def test_get_global_missing(testing_lib):
    name = "testing.definitely_not_registered_" + uuid.uuid4().hex
    with pytest.raises(KeyError, match=name):
        rt.Function.get_global(name)
    with pytest.raises(KeyError, match=name):
        rt.get_global_func(name)
    assert rt.Function.get_global(name, allow_missing=True) is None
    assert rt.get_global_func(name, allow_missing=True) is None


def test_register_global_then_call_through_get_global(testing_lib):
    name = "tvmffi_runtime_test.triple_" + uuid.uuid4().hex
    calls = []

    def triple(x: int) -> int:
        calls.append(x)
        return 3 * x

    try:
        registered = rt.Function.register_global(name, triple)
        assert isinstance(registered, rt.Function)
        f = rt.Function.get_global(name)
        assert f(5) == 15 and calls == [5]
        assert f.same_as(registered)
        assert name in __import__("tvmffi_runtime.reflection").reflection.list_global_functions()
        # a native caller reaches it too
        assert rt.get_global_func("testing.apply")(f, 2) == 6
        with pytest.raises(Exception, match="already registered"):
            rt.Function.register_global(name, lambda x: x)
        assert rt.Function.get_global(name)(1) == 3  # unchanged
        rt.Function.register_global(name, lambda x: -x, override=True)
        assert rt.Function.get_global(name)(4) == -4
    finally:
        rt.get_global_func("ffi.FunctionRemoveGlobal")(name)
    assert rt.get_global_func(name, allow_missing=True) is None


def test_register_global_accepts_a_function(g):
    name = "tvmffi_runtime_test.alias_" + uuid.uuid4().hex
    try:
        rt.Function.register_global(name, g("testing.add_one"))
        assert rt.get_global_func(name)(1) == 2
        assert rt.get_global_func(name).same_as(g("testing.add_one"))
    finally:
        g("ffi.FunctionRemoveGlobal")(name)


def test_from_packed_receives_the_raw_argument_list(g):
    received = []

    def packed(args):
        received.append(args)
        return len(args)

    f = rt.Function.from_packed(packed)
    assert isinstance(f, rt.Function)
    assert f(1, "two", None, [3]) == 4
    assert f() == 0
    assert g("testing.apply")(f, 1.5, b"x") == 2
    assert [type(a) for a in received] == [list, list, list]
    assert received[0][:3] == [1, "two", None] and received[0][3] == [3]
    assert received[1] == []
    assert received[2] == [1.5, b"x"]


def test_from_typed_checks_annotations(g):
    def repeat(text: str, times: int, sep: str = "") -> str:
        return sep.join([text] * times)

    f = rt.Function.from_typed(repeat)
    assert f("ab", 3) == "ababab"
    assert f("ab", 2, "-") == "ab-ab"
    with pytest.raises(TypeError, match=r"argument 1 \(times\).*expected int, got str"):
        f("ab", "3")
    with pytest.raises(TypeError, match=r"argument 0 \(text\)"):
        f(1, 3)
    with pytest.raises(TypeError, match=r"argument 1 \(times\)"):
        f("ab", True)  # bool is not accepted for int
    with pytest.raises(TypeError, match=r"repeat\(\) expects 2 to 3 arguments, got 1"):
        f("ab")
    with pytest.raises(TypeError, match="repeat"):
        f("a", 1, "", "extra")
    # the same checks apply when native code is the caller
    with pytest.raises(TypeError, match=r"argument 1 \(times\)"):
        g("testing.apply")(f, "ab", 2.5)


def test_from_typed_converts_and_accepts_containers(g):
    def total(xs: list[int], scale: float, names: dict[str, int]) -> float:
        assert type(xs) is list and type(names) is dict
        return (sum(xs) + sum(names.values())) * scale

    f = rt.Function.from_typed(total)
    assert f([1, 2], 2, {"a": 1}) == 8.0  # int accepted for float
    assert g("testing.apply")(f, [1, 2], 1.0, {"a": 3}) == 6.0  # Array / Map from native
    with pytest.raises(TypeError, match=r"argument 0 \(xs\)"):
        f({"a": 1}, 1.0, {})


def test_from_typed_optional_and_unions():
    from typing import Optional, Union

    # spelled with typing's Optional and Union on purpose: what this test converts
    def pick(a: Optional[int], b: Union[str, bytes] = "x") -> str:  # noqa: UP007, UP045
        return f"{a}:{b!r}"

    f = rt.Function.from_typed(pick)
    assert f(None) == "None:'x'"
    assert f(3, b"y") == "3:b'y'"
    with pytest.raises(TypeError, match=r"argument 1 \(b\)"):
        f(1, 2)


def test_from_typed_unresolvable_annotation_only_skips_that_parameter():
    def f(a: NoSuchTypeName, b: int) -> object:  # type: ignore[name-defined] # noqa: F821
        return (a, b)

    typed = rt.Function.from_typed(f)
    assert typed("anything", 1) == ["anything", 1]
    with pytest.raises(TypeError, match=r"argument 1 \(b\)"):
        typed("anything", "not an int")


def test_from_type_key_method_and_from_type_method(make_pair):
    init = rt.Function.from_type_key_method("testing.TestIntPair", "__ffi_init__")
    pair = init(20, 22)
    assert pair.type_key == "testing.TestIntPair"
    total = rt.Function.from_type_method(pair.type_index, "sum")
    assert isinstance(total, rt.Function)
    assert total(pair) == 42
    with pytest.raises(AttributeError, match="no_such_method"):
        rt.Function.from_type_method(pair.type_index, "no_such_method")
    with pytest.raises(KeyError, match=r"no\.such\.Type"):
        rt.Function.from_type_key_method("no.such.Type", "sum")


def test_methods_are_inherited_but_ffi_init_is_not(testing_lib):
    derived = rt.type_key_to_index("testing.TestObjectDerived")
    add = rt.Function.from_type_method(derived, "add_i64")  # defined on TestObjectBase
    obj = rt.Function.from_type_key_method("testing.TestObjectDerived", "__ffi_init__")({}, [], 4)
    assert add(obj, 1) == 5
    # __ffi_init__ of a type constructs that type, never its parent
    assert obj.type_key == "testing.TestObjectDerived"


def test_function_from_callable_keeps_the_callable_alive_while_referenced(g):
    state = {"n": 0}

    def bump():
        state["n"] += 1
        return state["n"]

    f = rt.Function.from_callable(bump)
    del bump
    gc.collect()
    assert f() == 1
    assert g("testing.apply")(f) == 2
    before = _callback.live_callbacks()
    del f
    gc.collect()
    assert _callback.live_callbacks() == before - 1  # released with the last reference
