"""Array / List / Map / Dict / Shape implement the collections.abc protocols with Python semantics.

Mutations of ``List`` and ``Dict`` are checked against a Python ``list`` / ``dict`` driven through
the same operations, so every step compares with what Python itself would do.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence

import pytest

import tvmffi_runtime as rt


# --------------------------------------------------------------------------------------------
# abc membership
# --------------------------------------------------------------------------------------------
def test_abc_membership():
    assert isinstance(rt.Array([1]), Sequence)
    assert not isinstance(rt.Array([1]), MutableSequence)
    assert isinstance(rt.List([1]), MutableSequence)
    assert isinstance(rt.Map({"a": 1}), Mapping)
    assert not isinstance(rt.Map({"a": 1}), MutableMapping)
    assert isinstance(rt.Dict({"a": 1}), MutableMapping)
    assert isinstance(rt.Shape([1, 2]), Sequence)
    for cls in (rt.Array, rt.List, rt.Map, rt.Dict, rt.Shape):
        assert issubclass(cls, rt.Object)


# --------------------------------------------------------------------------------------------
# Sequences: read side (Array and List share it)
# --------------------------------------------------------------------------------------------
ITEMS = [1, "two", 3.5, None, b"bytes", "a longer string value"]


@pytest.fixture(params=[rt.Array, rt.List])
def seq(request):
    return request.param(ITEMS)


def test_len_iter_index(seq):
    assert len(seq) == len(ITEMS)
    assert list(seq) == ITEMS
    assert [seq[i] for i in range(len(ITEMS))] == ITEMS
    assert [seq[-i] for i in range(1, len(ITEMS) + 1)] == [ITEMS[-i] for i in range(1, len(ITEMS) + 1)]
    assert list(reversed(seq)) == ITEMS[::-1]


@pytest.mark.parametrize(
    "sl",
    [slice(None), slice(1, 3), slice(-3, None), slice(None, None, 2), slice(None, None, -1),
     slice(4, 1, -1), slice(10, 20), slice(-100, 100), slice(3, 3)],
    ids=repr,
)  # fmt: skip
def test_slicing(seq, sl):
    assert list(seq[sl]) == ITEMS[sl]


@pytest.mark.parametrize("index", [len(ITEMS), len(ITEMS) + 5, -len(ITEMS) - 1, 1 << 40])
def test_index_out_of_range(seq, index):
    with pytest.raises(IndexError):
        seq[index]


def test_index_must_be_an_integer(seq):
    with pytest.raises(TypeError):
        seq["0"]
    assert seq[True] == ITEMS[1]  # bool is an int, like for list


def test_contains_index_count(seq):
    assert "two" in seq and None in seq and 3.5 in seq
    assert "three" not in seq and 2 not in seq
    assert seq.index("two") == 1
    assert seq.count(1) == 1 and seq.count("zzz") == 0
    with pytest.raises(ValueError):
        seq.index("missing")


def test_equality_with_python_equivalents(seq):
    assert seq == ITEMS
    assert seq == tuple(ITEMS)
    assert seq != ITEMS[:-1]
    assert seq != [*ITEMS, 1]
    assert seq != ["different"] * len(ITEMS)
    assert not (seq == "not a sequence")  # noqa: SIM201 - __eq__ itself, not __ne__
    assert seq == rt.Array(ITEMS) and seq == rt.List(ITEMS)


def test_repr_shows_items(seq):
    r = repr(seq)
    assert r.startswith(type(seq).__name__ + "(")
    for item in ("1", "'two'", "3.5", "None", "b'bytes'"):
        assert item in r


@pytest.mark.parametrize("cls", [rt.Array, rt.List])
def test_empty_sequences(cls):
    empty = cls()
    assert len(empty) == 0
    assert list(empty) == [] and list(reversed(empty)) == []
    assert empty == [] and empty == ()
    assert empty[:] == [] and empty[5:10] == []
    assert 1 not in empty
    assert not empty  # falsy, like an empty list
    with pytest.raises(IndexError):
        empty[0]
    with pytest.raises(IndexError):
        empty[-1]
    assert repr(empty) == f"{cls.__name__}([])"


def test_nested_sequences_compare_with_nested_python():
    arr = rt.Array([[1, 2], [3, [4, 5]], []])
    assert arr == [[1, 2], [3, [4, 5]], []]
    assert type(arr[1][1]) is rt.Array
    assert arr[1][1][-1] == 5


def test_array_is_immutable():
    arr = rt.Array([1, 2, 3])
    with pytest.raises(TypeError):
        arr[0] = 5  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        arr.append(4)  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        del arr[0]  # type: ignore[attr-defined]
    assert arr == [1, 2, 3]


def test_array_from_iterables():
    assert rt.Array(range(3)) == [0, 1, 2]
    assert rt.Array(x * x for x in range(4)) == [0, 1, 4, 9]
    assert rt.List("abc") == ["a", "b", "c"]


def test_containers_hold_objects():
    inner = rt.Array([1])
    outer = rt.Array([inner, inner])
    assert outer[0].same_as(inner) and outer[1].same_as(inner)
    assert inner in outer


# --------------------------------------------------------------------------------------------
# List mutation, checked step by step against a Python list
# --------------------------------------------------------------------------------------------
def _check(lst: rt.List, model: list) -> None:
    assert list(lst) == model
    assert len(lst) == len(model)


def test_list_mutations_match_python_list():
    lst, model = rt.List([1, 2, 3]), [1, 2, 3]
    steps = [
        lambda s: s.append(4),
        lambda s: s.append("a string longer than seven"),
        lambda s: s.insert(0, 0),
        lambda s: s.insert(-1, 99),
        lambda s: s.insert(100, "end"),
        lambda s: s.insert(-100, "start"),
        lambda s: s.__setitem__(2, "set"),
        lambda s: s.__setitem__(-1, "last"),
        lambda s: s.__delitem__(0),
        lambda s: s.__delitem__(-2),
        lambda s: s.__setitem__(slice(1, 3), ["x", "y", "z"]),  # grow
        lambda s: s.__setitem__(slice(0, 4), ["w"]),  # shrink
        lambda s: s.__setitem__(slice(2, 2), ["ins1", "ins2"]),  # pure insert
        lambda s: s.__setitem__(slice(None, None, 2), ["e"] * len(s[::2])),  # extended slice
        lambda s: s.__setitem__(slice(-2, None), []),
        lambda s: s.__delitem__(slice(1, 2)),
        lambda s: s.extend([10, 11, 12, 13]),
        lambda s: s.__delitem__(slice(None, None, 3)),
        lambda s: s.__delitem__(slice(5, 1)),  # empty range: no-op
        lambda s: s.reverse(),
        lambda s: s.remove(11),
        lambda s: s.__iadd__([7, 8]),
    ]
    for i, step in enumerate(steps):
        step(lst)
        step(model)
        assert list(lst) == model, f"after step {i}"
    assert lst.pop() == model.pop()
    assert lst.pop(0) == model.pop(0)
    assert lst.pop(-2) == model.pop(-2)
    _check(lst, model)
    lst.clear()
    model.clear()
    _check(lst, model)
    lst.append(1)
    _check(lst, [1])


def test_list_mutation_errors():
    lst = rt.List([1, 2, 3])
    with pytest.raises(IndexError):
        lst[3] = 0
    with pytest.raises(IndexError):
        lst[-4] = 0
    with pytest.raises(IndexError):
        del lst[3]
    with pytest.raises(IndexError):
        lst.pop(3)
    with pytest.raises(ValueError):
        lst[::2] = [1, 2, 3]  # extended slice of size 2
    with pytest.raises(ValueError):
        lst.remove(42)
    assert lst == [1, 2, 3]
    empty = rt.List()
    with pytest.raises(IndexError):
        empty.pop()


def test_list_mutation_is_visible_through_other_references(testing_lib):
    lst = rt.List([1])
    alias = rt.get_global_func("testing.echo")(lst)
    alias.append(2)
    assert lst == [1, 2]
    lst.append(rt.Array([3]))
    assert alias[-1] == [3]


# --------------------------------------------------------------------------------------------
# Map and Dict
# --------------------------------------------------------------------------------------------
DATA = {"a": 1, "b": [1, 2], 3: "three", "long key over seven bytes": None, 4.5: b"x"}


@pytest.fixture(params=[rt.Map, rt.Dict])
def mapping(request):
    return request.param(DATA)


def test_mapping_read_protocol(mapping):
    assert len(mapping) == len(DATA)
    assert set(mapping) == set(DATA)
    assert set(mapping.keys()) == set(DATA.keys())
    for key, value in DATA.items():
        assert key in mapping
        assert mapping[key] == value
        assert mapping.get(key) == value
    assert dict(mapping.items()) == DATA
    assert sorted(map(repr, mapping.values())) == sorted(
        map(repr, (rt.Array([1, 2]) if v == [1, 2] else v for v in DATA.values()))
    )
    assert "missing" not in mapping
    assert mapping.get("missing") is None
    assert mapping.get("missing", 42) == 42
    with pytest.raises(KeyError):
        mapping["missing"]


def test_mapping_membership_of_unconvertible_key(mapping):
    assert object() not in mapping


def test_mapping_equality(mapping):
    assert mapping == DATA
    assert mapping == rt.Map(DATA) and mapping == rt.Dict(DATA)
    assert mapping != {**DATA, "extra": 1}
    assert mapping != {k: v for k, v in DATA.items() if k != "a"}
    assert mapping != {**DATA, "a": 2}
    assert not (mapping == [("a", 1)])  # noqa: SIM201 - __eq__ itself, not __ne__


def test_mapping_repr(mapping):
    r = repr(mapping)
    assert r.startswith(type(mapping).__name__ + "(")
    assert "'a': 1" in r and "3: 'three'" in r


@pytest.mark.parametrize("cls", [rt.Map, rt.Dict])
def test_empty_mappings(cls):
    empty = cls()
    assert len(empty) == 0
    assert list(empty) == []  # iterating an empty map must not crash
    assert list(empty.items()) == [] and list(empty.keys()) == [] and list(empty.values()) == []
    assert dict(empty) == {}
    assert empty == {}
    assert "a" not in empty
    assert empty.get("a", 1) == 1
    with pytest.raises(KeyError):
        empty["a"]
    assert not empty


def test_map_from_pairs_and_mappings():
    assert rt.Map([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}
    assert rt.Dict(rt.Map({"a": 1})) == {"a": 1}


def test_map_is_immutable():
    m = rt.Map({"a": 1})
    with pytest.raises(TypeError):
        m["b"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        del m["a"]  # type: ignore[attr-defined]


def test_dict_mutations_match_python_dict():
    d, model = rt.Dict({"x": 1}), {"x": 1}
    steps = [
        lambda m: m.__setitem__("y", 2),
        lambda m: m.__setitem__("x", "replaced"),
        lambda m: m.__setitem__(3, [1, 2]),
        lambda m: m.__delitem__("y"),
        lambda m: m.update({"u": 1, "v": 2}),
        lambda m: m.setdefault("w", 9),
        lambda m: m.setdefault("u", 100),
        lambda m: m.pop("v"),
    ]
    for i, step in enumerate(steps):
        r1, r2 = step(d), step(model)
        assert r1 == r2, f"result of step {i}"
        assert d == model, f"after step {i}"
    assert d.pop("missing", "default") == "default"
    with pytest.raises(KeyError):
        del d["missing"]
    with pytest.raises(KeyError):
        d.pop("missing")
    d.clear()
    assert len(d) == 0 and list(d) == [] and d == {}
    d["again"] = 1
    assert d == {"again": 1}


def test_dict_mutation_is_visible_through_other_references(testing_lib):
    d = rt.Dict()
    alias = rt.get_global_func("testing.echo")(d)
    alias["k"] = "v"
    assert d["k"] == "v"
    del d["k"]
    assert "k" not in alias


def test_iteration_over_many_entries():
    data = {f"key{i}": i for i in range(200)}
    for cls in (rt.Map, rt.Dict):
        m = cls(data)
        assert sorted(m) == sorted(data)
        assert dict(m.items()) == data


# --------------------------------------------------------------------------------------------
# Shape
# --------------------------------------------------------------------------------------------
def test_shape_protocol():
    s = rt.Shape([2, 3, 4])
    assert len(s) == 3
    assert list(s) == [2, 3, 4]
    assert s[0] == 2 and s[-1] == 4
    assert s[1:] == (3, 4)
    assert s == (2, 3, 4) and s == [2, 3, 4] and s == rt.Shape([2, 3, 4])
    assert s != (2, 3)
    assert 3 in s and 5 not in s
    assert hash(s) == hash(rt.Shape((2, 3, 4)))
    assert repr(s) == "Shape([2, 3, 4])"
    with pytest.raises(IndexError):
        s[3]
    with pytest.raises(IndexError):
        s[-4]
    empty = rt.Shape()
    assert len(empty) == 0 and list(empty) == [] and empty == ()
