"""Property-based tests (hypothesis): type schemas, whole registries, and value round trips.

(a) Any type schema — valid, malformed, or valid with a malformed part, as a dict or as JSON text
    — is either parsed or rejected with SchemaError; annotations made from it are valid Python
    expressions; and the model turns a malformed one into a warning and ``Any``, never a crash.
(b) Random registries (snapshots with nested namespaces, hostile names, inheritance chains, name
    collisions across kinds, random field and method schemas) always build and render to Python
    that parses, keeps every registry name, and — for a few examples — passes mypy --strict,
    with a user's program told the type of each class, field and function (not ``Any``).
(c) Random nested Python values round-trip unchanged through ``testing.echo`` (and through a
    Python callback called from native code).

Generator bugs these properties found are pinned by small tests in ``test_hostile_registries.py``.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

import tvmffi_runtime as rt
from tvmffi_gen.model.builder import build_model
from tvmffi_gen.model.package import GenerationError
from tvmffi_gen.model.typemap import Annotator, Position, SchemaError, TypeRef, function_sig, parse_schema
from tvmffi_gen.registry.snapshot import FieldSnap, FunctionSnap, MethodSnap, Snapshot, TypeSnap
from tvmffi_gen.render.package import render_package

from conftest import BUILD_DIR
from mypy_reports import revealed_types
from registry_checks import declared_fields, import_problems, mypy_errors_each

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

# Keep hypothesis' caches out of the repository root (tests/_build is the ignored build cache).
set_hypothesis_home_dir(BUILD_DIR / "hypothesis")

FAST = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

#: Module-level aliases every generated module imports and refers to unqualified: registry names
#: equal to them must be renamed (pinned by test_names_equal_to_generated_import_aliases_*).
ALIAS_NAMES = ("_t", "_abc", "_rt", "_bind", "_ctypes", "_os", "_lib")

# =============================================================================================
# (a) type schemas
# =============================================================================================
SCHEMA_KEYS = [
    "int", "float", "bool", "None", "void", "Any", "ffi.String", "str", "ffi.SmallStr", "const char*",
    "ffi.Bytes", "bytes", "TVMFFIByteArray*", "ffi.BigInt", "Device", "DataType", "ffi.Tensor",
    "DLTensor*", "ffi.Shape", "ffi.Object", "ffi.Function", "ffi.Module", "ffi.Array", "ffi.List",
    "ffi.Map", "ffi.Dict", "Optional", "Variant", "ffi.Error", "std::vector", "Tuple",
    "pkgx.Known", "pkgx.Auto", "ext.Base", "no.SuchType", "", "weird key",
]  # fmt: skip

json_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6,
)
not_a_list = json_junk.filter(lambda v: not isinstance(v, list))
not_a_dict = json_junk.filter(lambda v: not isinstance(v, dict))
param_names = st.none() | st.sampled_from(["x", "self", "def", "_0", "1bad", "", "a-b", "x"]) | st.integers()


def _schemas(keys: list[str]) -> st.SearchStrategy[Any]:
    key = st.sampled_from(keys)

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        named_param = st.builds(
            lambda s, n: {**s, "name": n} if isinstance(s, dict) and n is not None else s, children, param_names
        )
        forms = [
            st.builds(lambda k, a: {"type": k, "args": a}, key, st.lists(children, max_size=3)),
            st.builds(lambda a: {"type": "ffi.Function", "args": a}, st.lists(children, max_size=4)),
            st.builds(
                lambda p, r: {"type": "ffi.Function", "named_args": {"params": p, "return": r}},
                st.lists(named_param, max_size=4),
                st.lists(children, max_size=1),
            ),
            st.builds(lambda p: {"type": "ffi.Function", "named_args": {"params": p}}, st.lists(children, max_size=2)),
            # malformed forms, also nested inside valid ones
            st.builds(lambda t: {"type": t}, not_a_list.filter(lambda v: not isinstance(v, str))),
            st.builds(lambda k, a: {"type": k, "args": a}, key, not_a_list),
            st.builds(lambda n: {"type": "ffi.Function", "named_args": n}, not_a_dict),
            st.builds(lambda p: {"type": "ffi.Function", "named_args": {"params": p}}, not_a_list),
            st.builds(lambda r: {"type": "ffi.Function", "named_args": {"return": r}}, not_a_list),
            st.builds(lambda a: {"type": "ffi.Function", "args": a}, not_a_list),
            json_junk,
        ]
        return st.one_of(forms)

    tree = st.recursive(st.builds(lambda k: {"type": k}, key), extend, max_leaves=10)
    as_text = st.one_of(tree.map(json.dumps), st.text(max_size=12), st.just("{"), st.just("[]"))
    return st.one_of(tree, tree, as_text, json_junk)


any_schema = _schemas(SCHEMA_KEYS)


def _parse_or_none(schema: Any) -> TypeRef | None:
    try:
        ref = parse_schema(schema)
    except SchemaError:
        return None
    assert isinstance(ref, TypeRef)
    return ref


def _resolve(key: str) -> str | None:
    return {"pkgx.Known": "Known", "ext.Base": "_rt.Object"}.get(key)


@FAST
@given(any_schema)
def test_schema_parse_and_annotate_never_crash(schema: Any) -> None:
    ref = _parse_or_none(schema)
    # JSON text means the same as the value it encodes
    if not isinstance(schema, str):
        try:
            encoded = json.dumps(schema)
        except (TypeError, ValueError):
            encoded = None
        if encoded is not None:
            assert _parse_or_none(encoded) == ref
    try:
        sig = function_sig(schema)
    except SchemaError:
        sig = None
    if ref is not None and ref.key != "ffi.Function":
        assert sig is None  # a function schema must be a function
    if ref is None:
        return
    positions: tuple[Position, ...] = ("param", "return")
    for pos in positions:
        warnings: list[str] = []
        ann = Annotator(resolve_object=_resolve, warn=warnings.append, context="ctx")
        text = ann.annotate(ref, pos)
        ast.parse(text, mode="eval")  # a valid Python expression
        assert all(w.startswith("ctx: unknown type") for w in warnings), warnings
        if ref.key in ("int", "float", "bool", "ffi.String", "ffi.Bytes"):
            assert text == {"ffi.String": "str", "ffi.Bytes": "bytes"}.get(ref.key, ref.key)


def _schema_snapshot(schema: Any) -> Snapshot:
    types = [
        TypeSnap(
            "pkgx.Known",
            ["ffi.Object"],
            fields=[FieldSnap("f", schema=schema, writable=True)],
            methods=[MethodSnap("m", schema=schema), MethodSnap("s", schema=schema, is_static=True)],
            init="method",
            init_schema=schema,
        ),
        TypeSnap(
            "pkgx.Auto",
            ["ffi.Object", "pkgx.Known"],
            fields=[
                FieldSnap("g", schema=schema, has_default=True, default=None),
                FieldSnap("h", schema=schema, kw_only=True),
            ],
            init="auto",
        ),
    ]
    functions = [FunctionSnap("pkgx.fn", schema=schema), FunctionSnap("top", schema=schema, exported=True)]
    return Snapshot(
        "libx.so", "/nonexistent/libx.so", [0, 1, 16], types, functions, {"ffi.Object": [], "ext.Base": ["ffi.Object"]}
    )


@FAST
@given(any_schema)
def test_model_turns_malformed_schemas_into_a_warning_and_any(schema: Any) -> None:
    warnings: list[str] = []
    model = build_model(_schema_snapshot(schema), "pkg", warn=warnings.append)
    assert warnings == model.warnings
    field = model.classes["pkgx.Known"].fields[0]
    fn = next(f for f in model.modules[("pkgx",)].functions if f.reg_name == "pkgx.fn")
    if schema is None:  # no schema: Any, silently
        assert field.getter_type == "_t.Any" and not fn.typed
        assert not any(w.startswith(("field pkgx.Known.f:", "function pkgx.fn:")) for w in warnings), warnings
    elif _parse_or_none(schema) is None:
        assert field.getter_type == field.setter_type == "_t.Any"
        assert any(
            w.startswith("field pkgx.Known.f: malformed type schema") and "typed as Any" in w for w in warnings
        ), warnings
    try:
        function_sig(schema)
        malformed_fn = False  # (None included: an unknown, packed signature)
    except SchemaError:
        malformed_fn = True
    if malformed_fn:
        assert not fn.typed and fn.ret == "_t.Any"
        assert any(w.startswith("function pkgx.fn: malformed type schema") for w in warnings), warnings
    for w in warnings:
        assert w.split(" ", 1)[0] in ("field", "method", "function", "type", "exported"), w
    for rel, text in render_package(model).items():
        if rel.endswith(".py"):
            ast.parse(text, rel)


# =============================================================================================
# (b) random registries
# =============================================================================================
SEGMENTS = ["a", "b", "ir", "def", "class", "match", "_", "1x", "x-y", "__init__", "é", "int", "Node", "", "ffi"]
NAMES = [
    "a", "b", "X", "Node", "IntImm", "def", "class", "match", "case", "type", "_", "int", "str", "None",
    "True", "self", "mro", "register", "same_as", "type_key", "type_index", "handle", "__init__",
    "__x__", "_ffi_fn_x", "_ffi", "1a", "a-b", "a b", "", "é", "ünï", "print", "sum", "annotations",
    "property", "value", "x_", "_h",
]  # fmt: skip


#: Defaults a field of each schema can have in a real registry (a literal of its type, or None
#: for a nullable reference); any other schema gets None or a non-literal default (``default_repr``,
#: i.e. ``_bind.NATIVE_DEFAULT`` in the signature).
TYPED_DEFAULTS: dict[Any, list[Any]] = {
    "int": [0, -3, 1 << 40, True, None], "float": [2.5, -0.0, 1, None], "bool": [True, False],
    "ffi.String": ["text", "ünï", 'q"uote', "", None], "Optional": [None], "Any": [None, 1, "s"],
}  # fmt: skip
ANY_DEFAULTS = [None, 0, -3, 2.5, True, "text", "ünï"]


def _default_for(draw: st.DrawFn, schema: Any, consistent: bool) -> tuple[Any, str | None]:
    if not consistent:
        return draw(st.sampled_from(ANY_DEFAULTS)), draw(st.sampled_from([None, "<factory>"]))
    key = schema.get("type") if isinstance(schema, dict) else None
    choices = TYPED_DEFAULTS.get(key, [None])
    if draw(st.booleans()):
        return None, "<factory>"
    return draw(st.sampled_from(choices)), None


def _registries(
    names: list[str], schema_keys: list[str], name_chars: str, consistent_defaults: bool = False
) -> st.SearchStrategy[Snapshot]:
    name = st.sampled_from(names) | st.text(alphabet=name_chars, max_size=4)
    key = st.sampled_from(schema_keys)

    @st.composite
    def build(draw: st.DrawFn) -> Snapshot:
        namespaces = draw(st.lists(st.lists(st.sampled_from(SEGMENTS), max_size=3).map(tuple), min_size=1, max_size=4))
        types: list[TypeSnap] = []
        n_types = draw(st.integers(0, 7))
        for _ in range(n_types * 3):  # attempts: keys must be unique
            if len(types) == n_types:
                break
            type_key = ".".join([*draw(st.sampled_from(namespaces)), draw(name)])
            if type_key in {t.type_key for t in types} or type_key in ("ffi.Object", "ext.Base", "ffi.Enum"):
                continue
            parent = draw(st.sampled_from([None, "ext.Base", "ffi.Enum", *range(len(types))]))
            if isinstance(parent, int):
                ancestors = [*types[parent].ancestors, types[parent].type_key]
            elif parent is None:
                ancestors = ["ffi.Object"]
            else:
                ancestors = ["ffi.Object", parent]
            known = [t.type_key for t in types] + [type_key]
            schema_key = st.sampled_from(schema_keys + known)
            field_schema = st.one_of(
                st.builds(lambda k: {"type": k}, schema_key),
                st.builds(lambda k: {"type": "ffi.Array", "args": [{"type": k}]}, schema_key),
                st.builds(lambda k: {"type": "Optional", "args": [{"type": k}]}, schema_key),
                st.builds(lambda a, b: {"type": "ffi.Map", "args": [{"type": a}, {"type": b}]}, key, schema_key),
                st.just("{malformed"),
                st.none(),
            )
            fn_schema = st.one_of(
                st.none(),
                st.builds(
                    lambda r, ps: {"type": "ffi.Function", "args": [r, *ps]},
                    field_schema.filter(lambda s: isinstance(s, dict)),
                    st.lists(field_schema.filter(lambda s: isinstance(s, dict)), max_size=3),
                ),
                st.builds(
                    lambda r, ps: {"type": "ffi.Function", "named_args": {"return": [r], "params": ps}},
                    field_schema.filter(lambda s: isinstance(s, dict)),
                    st.lists(
                        st.builds(
                            lambda s, n: {**s, "name": n}, field_schema.filter(lambda s: isinstance(s, dict)), name
                        ),
                        max_size=3,
                    ),
                ),
                st.just({"type": "int"}),  # not a function schema
            )
            # Within one type, field names are unique and method names are unique (the registry
            # keys them by name); the same name as a field and a method, or across types, is fine.
            fields = []
            for field_name in draw(st.lists(name, max_size=3, unique=True)):
                schema = draw(field_schema)
                has_default = draw(st.booleans())
                default, default_repr = _default_for(draw, schema, consistent_defaults) if has_default else (None, None)
                fields.append(FieldSnap(
                    field_name,
                    schema=schema,
                    writable=draw(st.booleans()),
                    has_default=has_default,
                    default=default,
                    default_repr=default_repr,
                    kw_only=draw(st.booleans()),
                    init=draw(st.booleans()),
                    offset=draw(st.sampled_from([0, 24, 32])),
                    size=draw(st.sampled_from([0, 1, 4, 8, 16])),
                    static_type_index=draw(st.sampled_from([-1, 1, 2, 3, 64, 70])),
                ))  # fmt: skip
            methods = [
                MethodSnap(method_name, schema=draw(fn_schema), is_static=draw(st.booleans()))
                for method_name in draw(st.lists(name, max_size=3, unique=True))
            ]
            types.append(
                TypeSnap(
                    type_key,
                    ancestors,
                    doc=draw(st.sampled_from(["", "Doc.", "Multi\nline\n\n  doc", 'ends with "quote"', "back\\slash"])),
                    fields=fields,
                    methods=methods,
                    init=draw(st.sampled_from([None, "auto", "method"])),
                    init_schema=draw(fn_schema),
                    enum_entries=draw(st.lists(name, max_size=3)) if parent == "ffi.Enum" else None,
                )
            )
        # functions: some in the same namespaces, some named like types or namespaces
        type_keys = [t.type_key for t in types]
        fn_name = st.one_of(
            st.builds(lambda ns, n: ".".join([*ns, n]), st.sampled_from(namespaces), name),
            st.sampled_from(type_keys) if type_keys else name,
            st.sampled_from([".".join(ns) for ns in namespaces if ns]) if any(namespaces) else name,
        )
        functions = [
            FunctionSnap(
                draw(fn_name),
                schema=draw(
                    st.none()
                    | st.builds(lambda k: {"type": "ffi.Function", "args": [{"type": k}, {"type": k}]}, key)
                    | st.just("{bad")
                ),
                exported=draw(st.booleans()),
            )
            for _ in range(draw(st.integers(0, 5)))
        ]
        return Snapshot(
            "libx.so",
            "/nonexistent/libx.so",
            [0, 1, 16],
            types,
            functions,
            {"ffi.Object": [], "ext.Base": ["ffi.Object"], "ffi.Enum": ["ffi.Object"]},
        )

    return build()


NAME_CHARS = 'abX_1-. é"\\\n'  # quotes, backslashes and newlines end up in string literals
any_registry = _registries(NAMES + list(ALIAS_NAMES), SCHEMA_KEYS, NAME_CHARS)
# For mypy: defaults that fit their field's schema (or None).
safe_registry = _registries(NAMES + list(ALIAS_NAMES), SCHEMA_KEYS, NAME_CHARS, consistent_defaults=True)


def _build_and_render(snap: Snapshot, name: str = "pkg") -> tuple[Any, dict[str, str]] | None:
    try:
        model = build_model(snap, name)
    except GenerationError as exc:  # the one documented refusal: namespaces inheriting in a cycle
        assert "cycle" in str(exc), exc
        return None
    return model, render_package(model)


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(any_registry)
def test_random_registries_build_render_and_parse(snap: Snapshot) -> None:
    built = _build_and_render(snap)
    if built is None:
        return
    model, files = built
    trees = {rel: ast.parse(text, rel) for rel, text in files.items() if rel.endswith(".py")}
    assert "__init__.py" in trees and "_lib.py" in trees
    # imports follow from the model: each module imports what it uses and uses what it imports
    for rel, tree in trees.items():
        assert not import_problems(tree), (rel, import_problems(tree))
    literals = {
        node.value for tree in trees.values() for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }  # fmt: skip
    docs = " ".join(" ".join(text.split()) for text in literals)  # whitespace-normalised docstrings

    def in_docs(name: str) -> bool:
        return " ".join(f"`{name}`".split()) in docs

    # Nothing is dropped: every type is a class, every registry name is looked up exactly (the
    # string literal passed to the runtime) and named in a docstring.
    for t in snap.types:
        cls = model.classes[t.type_key]
        tree = trees["/".join([*model.modules[cls.namespace].path, "__init__.py"])]
        assert cls.name in {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        assert t.type_key in literals and in_docs(t.type_key), t.type_key
        # a field's registry name is its attribute's name (the descriptor learns it through
        # __set_name__) or, where the Python name differs, the literal name= passed
        class_node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.name)
        declared = declared_fields(class_node)
        for f in t.fields:
            assert declared.get(f.name) == "attribute" or f.name in literals, f.name
            assert f.name in declared, (f.name, declared)
        for m in t.methods:
            assert m.name in literals, m.name
        for e in t.enum_entries or []:
            assert e in literals, e
    for fn in snap.functions:
        assert fn.name in literals and in_docs(fn.name), fn.name
    # Names are identifiers, not keywords, and unique in their module.
    for mod in model.modules.values():
        names = [c.name for c in mod.classes] + [f.name for f in mod.functions] + [s for s, _ in mod.subpackages]
        assert len(names) == len(set(names)), names
        for n in names:
            assert n.isidentifier() and not __import__("keyword").iskeyword(n), n
        for cls in mod.classes:
            members = [f.name for f in cls.fields] + [m.name for m in cls.methods] + [e for e, _ in cls.enum_entries]
            assert len(members) == len(set(members)), (cls.type_key, members)


@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
# No shrinking: each example costs a mypy run (~1 s), and shrinking a failure took > 5 minutes.
# An example is three registries, checked in one mypy run (each run first spends about a second
# on the runtime): 3 examples, 9 random registries.
@settings(
    max_examples=3,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
@given(st.lists(safe_registry, min_size=3, max_size=3))
@example(
    snaps=[
        Snapshot(
            "libx.so",
            library_path="/nonexistent/libx.so",
            tvm_ffi_version=[0, 1, 16],
            types=[
                TypeSnap(
                    ".b.x-y.\\-\\ ",
                    ancestors=["ffi.Object"],
                    doc="Doc.",
                    fields=[
                        FieldSnap(
                            "\\.  ",
                            schema={"type": "ffi.Bytes"},
                            writable=True,
                            has_default=True,
                            init=False,
                            offset=32,
                            static_type_index=1,
                        ),
                        FieldSnap(
                            "_",
                            has_default=True,
                            default_repr="<factory>",
                            offset=24,
                            size=4,
                            static_type_index=1,
                        ),
                    ],
                    init="auto",
                    init_schema={
                        "type": "ffi.Function",
                        "args": [{"type": "ffi.Map", "args": [{"type": "Optional"}, {"type": "const char*"}]}],
                    },
                ),
                TypeSnap(
                    ".b.x-y.__",
                    ancestors=["ffi.Object", "ext.Base"],
                    doc="back\\slash",
                    methods=[
                        MethodSnap(
                            "é",
                            schema={
                                "type": "ffi.Function",
                                "args": [{"type": "ffi.Map", "args": [{"type": ""}, {"type": "weird key"}]}],
                            },
                        ),
                        MethodSnap("\n.b_", schema={"type": "int"}),
                        MethodSnap('a"ba', schema={"type": "int"}),
                    ],
                    init="auto",
                ),
                TypeSnap(
                    'int.class.x-y. "',
                    ancestors=["ffi.Object", ".b.x-y.\\-\\ "],
                    doc='ends with "quote"',
                    fields=[
                        FieldSnap("", schema={"type": "Any"}, writable=True, size=8, static_type_index=64),
                        FieldSnap(
                            '"X1-',
                            schema={"type": "ffi.Array", "args": [{"type": "ffi.Tensor"}]},
                            writable=True,
                            kw_only=True,
                            offset=24,
                            size=16,
                            static_type_index=2,
                        ),
                        FieldSnap(
                            '"',
                            schema={"type": "ffi.Map", "args": [{"type": "ffi.SmallStr"}, {"type": "Any"}]},
                            has_default=True,
                            default_repr="<factory>",
                            offset=24,
                            size=4,
                            static_type_index=2,
                        ),
                    ],
                    methods=[
                        MethodSnap('\n".', schema={"type": "int"}),
                        MethodSnap("b-\n1", schema={"type": "int"}, is_static=True),
                    ],
                    init="method",
                    init_schema={"type": "int"},
                ),
            ],
            functions=[
                FunctionSnap(".b.x-y.__", schema="{bad", exported=True),
                FunctionSnap('int.class.x-y.a"\\', schema="{bad", exported=True),
            ],
            external_types={"ffi.Object": [], "ext.Base": ["ffi.Object"], "ffi.Enum": ["ffi.Object"]},
        )
    ]
).via("discovered failure")
def test_random_registries_pass_mypy_strict(snaps: list[Snapshot]) -> None:
    packages, programs, expected = {}, {}, {}
    for i, snap in enumerate(snaps):
        name = "pkg" if i == 0 else f"pkg_{i}"
        built = _build_and_render(snap, name)
        if built is not None:  # refused: namespaces inheriting in a cycle
            packages[name] = built[1]
            programs[name], expected[name] = _reveal_program(built[0], snap, name)
    assume(packages)
    for name, (errors, report) in mypy_errors_each(packages, programs).items():
        assert errors == 0, (name, report)  # hypothesis prints the registries; `name` is the i-th
        revealed = revealed_types(report)
        assert len(revealed) == len(expected[name]), (name, report)
        for got, want in zip(revealed, expected[name], strict=True):
            assert _reveals(got, want), (name, got, want, programs[name])


def _reveal_program(model: Any, snap: Snapshot, package: str) -> tuple[str, list[str]]:
    """A user's program that reveals a value of every class of ``model`` (rendered as
    ``package``), each of its fields whose annotation holds no ``Any``, and every typed
    function; and what each reveal must be: the class's full name, ``NOT_ANY`` or ``CALLABLE``."""
    imports: dict[str, str] = {}  # module -> its alias in the program

    def alias(namespace: tuple[str, ...]) -> tuple[str, str]:
        module = ".".join([package, *model.modules[namespace].path])
        return module, imports.setdefault(module, f"m{len(imports)}")

    params: list[str] = []
    reveals: list[tuple[str, str]] = []
    for i, t in enumerate(snap.types):
        cls = model.classes[t.type_key]
        module, m = alias(cls.namespace)
        params.append(f"v{i}: {m}.{cls.name}")
        reveals.append((f"v{i}", f"{module}.{cls.name}"))
        reveals += [(f"v{i}.{f.name}", NOT_ANY) for f in cls.fields if "Any" not in f.getter_type]
    for namespace, mod in model.modules.items():
        for fn in mod.functions:
            if fn.typed:
                reveals.append((f"{alias(namespace)[1]}.{fn.name}", CALLABLE))
    lines = [f"import {module} as {m}" for module, m in imports.items()]
    lines += ["", "", f"def main({', '.join(params)}) -> None:", "    pass"]
    lines += [f"    reveal_type({expr})" for expr, _ in reveals]
    return "\n".join(lines) + "\n", [want for _, want in reveals]


NOT_ANY, CALLABLE = "<not Any>", "<a callable>"


def _reveals(got: str, want: str) -> bool:
    """Whether mypy's revealed type ``got`` is what ``_reveal_program`` said it must be."""
    if want == NOT_ANY:
        return "Any" not in got
    if want == CALLABLE:
        return got.startswith(("def ", "Overload("))
    return got == want


# =============================================================================================
# (c) values round-trip through testing.echo
# =============================================================================================
leaf_values = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(1 << 200), max_value=1 << 200)
    | st.sampled_from([(1 << 63) - 1, -(1 << 63), 1 << 63, -(1 << 63) - 1, 1 << 64, -(1 << 64)])
    | st.floats()
    | st.text()
    | st.text(alphabet="\x00aé✓\U0001f600", max_size=70)
    | st.binary(max_size=70)
)
nested_values = st.recursive(
    leaf_values,
    lambda c: (
        st.lists(c, max_size=4)
        | st.lists(c, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=8), c, max_size=4)
    ),
    max_leaves=25,
)


def same_value(orig: Any, got: Any) -> bool:
    """``got`` (what came back) holds ``orig`` (what was sent): containers as rt.Array / rt.Map."""
    if orig is None:
        return got is None
    if isinstance(orig, bool):
        return type(got) is bool and got == orig
    if isinstance(orig, int):
        return type(got) is int and got == orig
    if isinstance(orig, float):
        if type(got) is not float:
            return False
        if math.isnan(orig):
            return math.isnan(got)
        return got == orig and math.copysign(1.0, got) == math.copysign(1.0, orig)
    if isinstance(orig, (str, bytes)):
        return type(got) is type(orig) and got == orig
    if isinstance(orig, (list, tuple)):
        return isinstance(got, rt.Array) and len(got) == len(orig) and all(map(same_value, orig, list(got)))
    if isinstance(orig, dict):
        if not isinstance(got, rt.Map) or len(got) != len(orig):
            return False
        items = dict(got.items())
        return set(items) == set(orig) and all(same_value(v, items[k]) for k, v in orig.items())
    raise AssertionError(f"unexpected value {orig!r}")


@pytest.fixture(scope="module")
def echo_fns(testing_lib: Any) -> tuple[rt.Function, rt.Function, rt.Function]:
    echo = rt.Function.get_global("testing.echo")
    apply = rt.Function.get_global("testing.apply")
    assert echo is not None and apply is not None
    return echo, apply, rt.Function.from_callable(lambda x: x)


def test_same_value_can_fail() -> None:
    assert not same_value([1, 2], rt.Array([1, 3]))
    assert not same_value({"a": 1}, rt.Map({"a": True}))
    assert not same_value(-0.0, 0.0)
    assert not same_value(1, True)
    assert not same_value("a", b"a")


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nested_values)
def test_values_round_trip_through_echo(echo_fns: tuple[rt.Function, rt.Function, rt.Function], value: Any) -> None:
    echo, apply, identity = echo_fns
    got = echo(value)
    assert same_value(value, got), (value, got)
    # native -> Python callback -> native -> Python, and what came back goes back in unchanged
    again = apply(identity, value)
    assert same_value(value, again), (value, again)
    assert same_value(value, echo(got))
