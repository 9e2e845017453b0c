"""The editor checks' judges on answers shaped as the servers send them (copied from real runs of
basedpyright and jedi-language-server), without starting a server: each judge passes what a user
should see and names each thing a user should not."""

from __future__ import annotations

import re
from pathlib import Path

from editor_checks import (
    TESTING_CHECKS,
    TVM_CHECKS,
    Context,
    Spot,
    completion_members,
    definition_at,
    hover_read_only,
    hover_shows,
    returns,
    shown,
    signature_shows,
)
from editor_workspace import TESTING_PROGRAM, TVM_PROGRAM, Side


def context(tmp_path: Path, generated: bool = True) -> Context:
    return Context(Side("ours", tmp_path / "program.py", (), tmp_path), generated)


def test_completion_with_value_types_passes(tmp_path: Path) -> None:
    answer = {
        "items": [
            {"label": "a", "kind": 21, "documentation": {"kind": "markdown", "value": "```python\na: int\n```"}},
            {"label": "sum()", "kind": 2, "detail": "def sum() -> int"},
        ]
    }
    judge = completion_members({"a": shown("int"), "sum": returns("int")}, read_only=("a",))
    assert judge(answer, context(tmp_path)) == []


def test_completion_of_a_descriptor_declaration_fails(tmp_path: Path) -> None:
    answer = [{"label": "a", "kind": 6, "detail": 'a: _t.Final[_bind.ReadOnlyField[int]] = _bind.field("i64", 24)'}]
    problems = completion_members({"a": shown("int"), "b": shown("int")})(answer, context(tmp_path))
    assert problems == [
        "'a' shown without its type int",
        "'b' not offered",
        "shows the alias '_bind.'",
        "shows the alias '_t.'",
    ]


def test_final_shows_the_value_type_and_read_only(tmp_path: Path) -> None:
    answer = [{"label": "a", "kind": 6, "detail": "a: Final[int]"}]
    assert completion_members({"a": shown("int")}, read_only=("a",))(answer, context(tmp_path)) == []
    writable = completion_members({"a": shown("int")}, writable=("a",))
    assert writable([{"label": "a", "kind": 21, "detail": "a: int"}], context(tmp_path)) == [
        "'a' shown read-only, but it is writable"
    ]


def test_hover_with_unnamed_parameters_and_boilerplate_fails(tmp_path: Path) -> None:
    text = "```python\nclass TestIntPair(_0: SupportsIndex, _1: SupportsIndex, /)\n```\n---\n"
    text += "Construct through ``testing.TestIntPair.__ffi_init__``."
    judge = hover_shows({"parameter a": r"\ba: (int|SupportsIndex)\b", "parameter b": r"\bb: (int|SupportsIndex)\b"})
    assert judge({"contents": {"kind": "markdown", "value": text}}, context(tmp_path)) == [
        "parameter a",
        "parameter b",
        "shows boilerplate 'Construct through'",
        "shows reStructuredText ``double backticks``",
    ]
    named = "```python\nclass TestIntPair(a: SupportsIndex, b: SupportsIndex, /)\n```"
    assert judge({"contents": {"kind": "markdown", "value": named}}, context(tmp_path)) == []


def test_hover_read_only(tmp_path: Path) -> None:
    judge = hover_read_only(shown("int").pattern)
    assert (
        judge({"contents": {"kind": "markdown", "value": "```python\n(constant) a: int\n```"}}, context(tmp_path)) == []
    )
    assert judge({"contents": "```python\n(variable) a: int\n```"}, context(tmp_path)) == ["not shown read-only"]
    assert judge(None, context(tmp_path)) == ["no hover", "not shown read-only"]


def test_incomplete_is_allowed_only_for_parameters_the_source_leaves_open(tmp_path: Path) -> None:
    open_parameters = hover_shows({"dtype": r"\bdtype\b"}, params_unknown=True)
    shown_text = {"contents": "def astype(dtype: Incomplete, span: Incomplete = None) -> Expr"}
    assert open_parameters(shown_text, context(tmp_path, generated=False)) == []
    lost_return = {"contents": "def astype(dtype: Incomplete, span: Incomplete = None) -> Incomplete"}
    assert open_parameters(lost_return, context(tmp_path, generated=False)) == ["shows Incomplete"]
    assert hover_shows({})(shown_text, context(tmp_path, generated=False)) == ["shows Incomplete"]


def test_signature_help(tmp_path: Path) -> None:
    judge = signature_shows({"parameter a": r"\ba: int\b"})
    answer = {"signatures": [{"label": "TestIntPair(a: int, b: int)", "parameters": [{"label": "a"}]}]}
    assert judge({**answer, "activeParameter": 0}, context(tmp_path)) == []
    assert judge({**answer, "activeParameter": 1}, context(tmp_path)) == ["active parameter 1, not the first"]
    assert judge({"signatures": []}, context(tmp_path)) == ["no signature help"]


def test_definition_lands_on_the_class_in_the_package(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("import x\n\nclass TestIntPair(Object):\n    pass\n")
    judge = definition_at("class TestIntPair")
    on_class = {"uri": source.as_uri(), "range": {"start": {"line": 2, "character": 6}}}
    assert judge([on_class], context(tmp_path)) == []
    elsewhere = {"uri": source.as_uri(), "range": {"start": {"line": 0, "character": 0}}}
    assert judge(elsewhere, context(tmp_path)) == [f"lands at {source}:1, not on 'class TestIntPair'"]
    outside = Context(Side("ours", source, (), tmp_path / "other"), True)
    assert judge([on_class], outside) == [f"lands at {source}:3, not on 'class TestIntPair'"]


def test_value_type_patterns() -> None:
    pattern = re.compile(shown("int").pattern)
    assert pattern.search("a: int") and pattern.search("a: Final[int]") and pattern.search("int([x]) -> integer")
    assert not pattern.search("a: ReadOnlyField[int]") and not pattern.search("_t.Final[_bind.ReadOnlyField[int]]")


def test_every_spot_is_in_its_program() -> None:
    """Each check asks at a spot its program holds (a spot it does not raises ValueError)."""
    for checks, program in ((TESTING_CHECKS, TESTING_PROGRAM.format(module="m")), (TVM_CHECKS, TVM_PROGRAM)):
        for check in checks:
            line, character = check.spot.position(program)
            assert 0 <= character <= len(program.splitlines()[line])
    assert Spot("pair = TestIntPair", back=4).position("\npair = TestIntPair(1, 2)\n") == (1, 14)
