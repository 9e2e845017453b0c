"""What a user sees in an editor, as a table of checks: server x subject x check, each judged on
our side and on the peer's.

A check is one LSP request at one spot of a user's program (a completion after ``pair.``, a hover
on a class, ...) and a judge of the answer's text, which returns the problems a user would see
(none: the check passes). Every judge also applies the rules of issue 35 that hold for every
answer: no private import alias (``_t.``, ``_abc.``, ``_bind.``, ...), no registry boilerplate,
no ``Incomplete`` where the source or the registry knows the type, and for a generated package no
reStructuredText double backticks (the servers render Markdown).

``python tests/editor/editor_checks.py [--servers ...] [--json F]`` prints the table as Markdown.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from editor_workspace import Side, generated_sides, tvm_installed, tvm_sides
from lsp_answers import (
    CompletionItem,
    completion_items,
    definition_places,
    hover_text,
    signature,
)
from lsp_client import SERVERS, LanguageServer, ServerError

#: A private module alias in a type or signature: ``_t.Any``, ``_abc.Mapping``, ``_bind.Field``,
#: ``_rt.Array``, ``_tvm_ir.Span``. A user reads ``Any``, ``Mapping``, ``Array``, ``Span``.
PRIVATE_ALIAS = re.compile(r"(?<![\w.])_[a-z][a-z0-9_]*\.[A-Za-z_]")
#: The generator's wording that tells a user nothing the signature does not.
BOILERPLATE = ("Registry type:", "Construct through", "Registry field:")
#: How the servers mark a member read-only: pyright's kinds Constant (``Final``) and Property, or
#: words in the text.
READ_ONLY_KINDS = {10, 21}
READ_ONLY_TEXT = re.compile(r"read-only|\((constant|property)\)|\bproperty\b|\bFinal\b")
#: reStructuredText's inline literal, which Markdown shows with its backticks (not a code fence)
RST_LITERAL = re.compile(r"(?<!`)``(?!`)")
#: A value type shown as such: not as a type argument (``ReadOnlyField[int]``) or attribute
#: (``_t.Any``), except ``Final``'s, which shows the value type and that it is read-only
#: (``a: Final[int]``): what ``shown("int")`` looks for.
VALUE_TYPE_START = r"(?:(?<![\[\w.])|(?<=\bFinal\[))"
#: Markdown escapes pyright puts in docs (``add\_i64``), taken out before matching words.
MARKDOWN_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|])")


@dataclass(frozen=True)
class Spot:
    """Where in the program a request is made: just after ``needle`` (or ``back`` characters
    before its end), on the first line holding it."""

    needle: str
    back: int = 0

    def position(self, text: str) -> tuple[int, int]:
        for number, line in enumerate(text.splitlines()):
            column = line.find(self.needle)
            if column >= 0:
                return number, column + len(self.needle) - self.back
        raise ValueError(f"{self.needle!r} is not in the program")


#: What a judge gets: the answer's JSON and the side it is judging; what it returns: the problems.
Judge = Callable[[Any, "Context"], list[str]]


@dataclass(frozen=True)
class Context:
    """What a judge may need besides the answer: the side, and whether the subject is a generated
    package (its docs come from the registry, so they must render as Markdown)."""

    side: Side
    generated: bool


@dataclass(frozen=True)
class Check:
    """One request at one spot, and the judge of its answer."""

    name: str
    method: str
    spot: Spot
    judge: Judge
    #: resolve these completion items first (an editor resolves the item it shows the detail of)
    resolve: tuple[str, ...] = ()


# -- the rules every answer keeps --------------------------------------------------------------


def plain(text: str) -> str:
    """A text with pyright's Markdown escapes taken out."""
    return MARKDOWN_ESCAPE.sub(r"\1", text)


def internals_shown(text: str, context: Context, params_unknown: bool = False) -> list[str]:
    """What a user should not see in ``text``: private aliases, boilerplate, ``Incomplete``
    (only as a return type where the source leaves the parameters unannotated), and in a
    generated package's docs reStructuredText's double backticks."""
    problems = [f"shows the alias {m.group(0)[:-1]!r}" for m in PRIVATE_ALIAS.finditer(text)]
    problems += [f"shows boilerplate {b!r}" for b in BOILERPLATE if b in text]
    incomplete = r"->\s*Incomplete" if params_unknown else r"\bIncomplete\b"
    if re.search(incomplete, text):
        problems.append("shows Incomplete")
    if context.generated and RST_LITERAL.search(text):
        problems.append("shows reStructuredText ``double backticks``")
    return sorted(set(problems))


def missing(pattern: str, text: str, what: str) -> list[str]:
    """``[what]`` when ``pattern`` does not match the text (with Markdown escapes taken out)."""
    return [] if re.search(pattern, plain(text)) else [what]


# -- judges -----------------------------------------------------------------------------------


def member_name(label: str) -> str:
    """The name a completion label completes (pylsp labels a method ``sum()``)."""
    return re.sub(r"\W.*", "", label)


def item_by_label(answer: Any) -> dict[str, CompletionItem]:
    """The items by the name they complete."""
    return {member_name(item.label): item for item in completion_items(answer)}


class Shows(NamedTuple):
    """What a completion item must show: a pattern, and how a failure names it."""

    what: str
    pattern: str


def shown(type_pattern: str, what: str = "") -> Shows:
    """A value type shown as the type of the thing (``a: int``, ``a: Final[int]``, or ``int`` alone
    as pylsp's hover shows it), not as an argument of another type (``ReadOnlyField[int]``)."""
    return Shows(f"its type {what or type_pattern}", rf"{VALUE_TYPE_START}{type_pattern}(?!\w)")


def returns(type_name: str) -> Shows:
    """A method's return type shown after its arrow."""
    return Shows(f"its return type {type_name}", rf"->\s*\(?{type_name}\b")


#: A member offered, whatever its item shows.
OFFERED = Shows("anything", "")


def says(words: str) -> Shows:
    """Words of a doc, or a name, shown as they are."""
    return Shows(repr(words), re.escape(words))


def completion_members(typed: dict[str, Shows], read_only: Sequence[str] = (), writable: Sequence[str] = ()) -> Judge:
    """Completion offers each member of ``typed`` and shows what its pattern matches (a field's
    value type, a method's return); the ``read_only`` members are shown read-only and the
    ``writable`` ones are not."""

    def judge(answer: Any, context: Context) -> list[str]:
        items = item_by_label(answer)
        problems = [f"{name!r} not offered" for name in typed if name not in items]
        for name, (what, pattern) in typed.items():
            if name in items:
                problems += missing(pattern, items[name].shown, f"{name!r} shown without {what}")
                problems += internals_shown(items[name].shown, context, params_unknown=not context.generated)
        for name in read_only:
            item = items.get(name)
            if item is not None and item.kind not in READ_ONLY_KINDS and not READ_ONLY_TEXT.search(item.shown):
                problems.append(f"{name!r} not shown read-only")
        for name in writable:
            item = items.get(name)
            if item is not None and (item.kind == 21 or "read-only" in item.shown):
                problems.append(f"{name!r} shown read-only, but it is writable")
        return sorted(set(problems))

    return judge


def hover_shows(patterns: dict[str, str], params_unknown: bool = False) -> Judge:
    """The hover shows each pattern (keyed by what it stands for) and nothing internal."""

    def judge(answer: Any, context: Context) -> list[str]:
        text = hover_text(answer)
        if not text:
            return ["no hover"]
        problems = [problem for what, pattern in patterns.items() for problem in missing(pattern, text, what)]
        return problems + internals_shown(text, context, params_unknown)

    return judge


def hover_read_only(pattern: str) -> Judge:
    """The hover shows the field's value type and that the field is read-only."""

    def judge(answer: Any, context: Context) -> list[str]:
        text = hover_text(answer)
        problems = hover_shows({"the value type": pattern})(answer, context)
        return problems + ([] if READ_ONLY_TEXT.search(text) else ["not shown read-only"])

    return judge


def signature_shows(patterns: dict[str, str], params_unknown: bool = False) -> Judge:
    """Signature help offers a signature whose label (with its docs) shows each pattern, and the
    first parameter is the active one."""

    def judge(answer: Any, context: Context) -> list[str]:
        shown = signature(answer)
        if shown is None:
            return ["no signature help"]
        text = f"{shown.label}\n{shown.documentation}"
        problems = [problem for what, pattern in patterns.items() for problem in missing(pattern, text, what)]
        if shown.active_parameter not in (0, None):
            problems.append(f"active parameter {shown.active_parameter}, not the first")
        return problems + internals_shown(text, context, params_unknown)

    return judge


def definition_at(class_line: str) -> Judge:
    """A definition lands on the line ``class_line`` starts, in a Python source or stub file of
    the side's package (for stubs: in the package's own source, not in the stubs)."""

    def judge(answer: Any, context: Context) -> list[str]:
        places = definition_places(answer)
        if not places:
            return ["no definition"]
        for place in places:
            in_package = place.path.resolve().is_relative_to(context.side.package_dir)
            lines = place.path.read_text().splitlines() if place.path.is_file() else []
            if in_package and place.line < len(lines) and lines[place.line].lstrip().startswith(class_line):
                return []
        return [f"lands at {', '.join(f'{p.path}:{p.line + 1}' for p in places)}, not on {class_line!r}"]

    return judge


# -- the checks of each subject -----------------------------------------------------------------

INT = r"(int|SupportsIndex)"
#: ``Var``'s parameter ``ty``, as tvm's source spells it (a string annotation, which jedi quotes)
TY_PARAMETER = r"\bty: \"?(tvm\.ir\.)?Type \| str \| None\b"

TESTING_CHECKS = (
    Check(
        "completion: fields and methods with their types",
        "completion",
        Spot("first = pair."),
        completion_members({"a": shown("int"), "b": shown("int"), "sum": returns("int")}),
        resolve=("a", "b", "sum"),
    ),
    Check(
        "completion: read-only field shown read-only",
        "completion",
        Spot("count = derived."),
        completion_members({"v_f64": shown("float")}, read_only=("v_f64",), writable=("v_i64",)),
        resolve=("v_f64", "v_i64"),
    ),
    Check(
        "completion: inherited and container fields",
        "completion",
        Spot("count = derived."),
        completion_members(
            {
                "v_i64": shown("int"),
                "v_map": shown(r"(Map|Mapping)\[Any, Any\]", "Map[Any, Any]"),
                "v_array": shown(r"(Array|Sequence)\[Any\]", "Array[Any]"),
                "add_i64": returns("int"),
            }
        ),
        resolve=("v_i64", "v_map", "v_array", "add_i64"),
    ),
    Check(
        "completion: method shows the registry's doc",
        "completion",
        Spot("first = pair."),
        completion_members({"sum": says("compute sum of a and b")}),
        resolve=("sum",),
    ),
    Check(
        "hover: class shows its constructor's names and types",
        "hover",
        Spot("pair = TestIntPair", back=4),
        hover_shows(
            {"the class": r"\bTestIntPair\(", "parameter a": rf"\ba: {INT}\b", "parameter b": rf"\bb: {INT}\b"}
        ),
    ),
    Check(
        "hover: auto-init class shows fields and defaults",
        "hover",
        Spot("derived = TestObjectDerived", back=4),
        hover_shows(
            {
                "parameter v_map": r"\bv_map: Mapping\[Any, Any\]",
                "parameter v_array": r"\bv_array: Sequence\[Any\]",
                "parameter v_i64 with a default": rf"\bv_i64: {INT}\s*=",
            }
        ),
    ),
    Check(
        "hover: read-only field shows its type, read-only",
        "hover",
        Spot("first = pair.a"),
        hover_read_only(shown("int").pattern),
    ),
    Check(
        "hover: field shows its type and the registry's doc",
        "hover",
        Spot("count = derived.v_i64"),
        hover_shows({"the value type": shown("int").pattern, "the registry's doc": r"i64 field"}),
    ),
    Check(
        "hover: method shows its signature and the registry's doc",
        "hover",
        Spot("total = pair.sum"),
        hover_shows({"the return type": r"->\s*int", "the registry's doc": r"compute sum of a and b"}),
    ),
    Check(
        "signature help: constructor call",
        "signatureHelp",
        Spot("TestIntPair("),
        signature_shows({"parameter a": rf"\ba: {INT}\b", "parameter b": rf"\bb: {INT}\b"}),
    ),
    Check(
        "signature help: method call",
        "signatureHelp",
        Spot("derived.add_i64("),
        signature_shows({"an int parameter": rf"\w+: {INT}\b", "the return type": r"->\s*int", "the doc": r"add_i64"}),
    ),
    Check(
        "definition: lands on the class",
        "definition",
        Spot("pair = TestIntPair", back=4),
        definition_at("class TestIntPair"),
    ),
)

TVM_CHECKS = (
    Check(
        "completion: fields and methods with their types",
        "completion",
        Spot("label = x."),
        completion_members(
            {"name": shown("str"), "span": shown(r"Span \| None", "Span | None"), "astype": says("dtype")}
        ),
        resolve=("name", "span", "astype"),
    ),
    Check(
        "completion: read-only field shown read-only",
        "completion",
        Spot("label = x."),
        completion_members({"name": shown("str")}, read_only=("name",)),
        resolve=("name",),
    ),
    Check(
        "completion: on a value whose type the source determines",
        "completion",
        Spot("cast = y."),
        completion_members({"same_as": OFFERED, "ty": OFFERED}),
        resolve=("same_as", "ty"),
    ),
    Check(
        "completion: tvm.cpu() offers tvm's Device members",
        "completion",
        Spot("ready = dev."),
        completion_members({"exist": says("exist"), "sync": says("sync")}),
        resolve=("exist", "sync"),
    ),
    Check(
        "hover: class shows its constructor's names, types and docs",
        "hover",
        Spot("x = Var", back=1),
        hover_shows(
            {
                "the class": r"\bVar\(",
                "parameter name": r"\bname: str \| None\b",
                "parameter ty": TY_PARAMETER,
                "the doc": r"canonical local variable",
            }
        ),
    ),
    Check(
        "hover: method shows the return type its source determines",
        "hover",
        Spot("y = x.astype", back=1),
        hover_shows(
            {"parameter dtype": r"\bdtype\b", "a return type naming Expr": r"->\s*\(?Expr\b"}, params_unknown=True
        ),
    ),
    Check(
        "hover: field shows its type",
        "hover",
        Spot("label = x.name", back=1),
        hover_shows({"the value type": shown("str").pattern}),
    ),
    Check(
        "signature help: constructor call",
        "signatureHelp",
        Spot("Var("),
        signature_shows({"parameter name": r"\bname: str \| None\b", "parameter ty": TY_PARAMETER}),
    ),
    Check(
        "signature help: method call",
        "signatureHelp",
        Spot("astype("),
        signature_shows({"parameter dtype": r"\bdtype\b"}, params_unknown=True),
    ),
    Check(
        "definition: lands on the class in tvm's source",
        "definition",
        Spot("x = Var", back=1),
        definition_at("class Var("),
    ),
)


@dataclass(frozen=True)
class Subject:
    """What the checks run on: the two sides and how they share servers."""

    name: str
    checks: tuple[Check, ...]
    generated: bool
    #: whether one server (on ours' path) serves both sides, or each side needs its own environment
    one_server: bool


TESTING = Subject("generated package", TESTING_CHECKS, generated=True, one_server=True)
TVM = Subject("tvm with stubs", TVM_CHECKS, generated=False, one_server=False)


@dataclass(frozen=True)
class Verdict:
    """One check's outcome on one side: the problems a user would see (none: it passes)."""

    server: str
    subject: str
    check: str
    side: str
    problems: tuple[str, ...]
    #: what the answer showed, as text (quoted in docs/editor.md)
    shown: str = ""

    @property
    def passed(self) -> bool:
        return not self.problems


def ask(server: LanguageServer, check: Check, program: Path) -> Any:
    """The answer to ``check``'s request at its spot in ``program`` (completion items named in
    ``resolve`` resolved, as the editor does for the item it shows)."""
    uri = server.open(program)
    line, character = check.spot.position(program.read_text())
    answer = server.at(check.method, uri, line, character)
    if check.method != "completion" or not check.resolve:
        return answer
    if not server.capabilities.get("completionProvider", {}).get("resolveProvider"):
        return answer
    items = answer.get("items", []) if isinstance(answer, dict) else (answer or [])
    return [
        server.request("completionItem/resolve", i) if member_name(i["label"]) in check.resolve else i for i in items
    ]


def answer_shown(check: Check, answer: Any) -> str:
    """The text a user sees for an answer: the checked completion items, the hover, the active
    signature with its docs, or where a definition lands."""
    if check.method == "completion":
        items = item_by_label(answer)
        return "\n".join(
            f"{name} [kind {items[name].kind}]: {items[name].shown}" for name in check.resolve if name in items
        )
    if check.method == "hover":
        return hover_text(answer)
    if check.method == "signatureHelp":
        shown = signature(answer)
        return f"{shown.label}\n{shown.documentation}" if shown else ""
    return "\n".join(f"{place.path}:{place.line + 1}" for place in definition_places(answer))


def judge_side(server: LanguageServer, subject: Subject, side: Side) -> list[Verdict]:
    """Every check of the subject on one side, through one server."""
    context = Context(side, subject.generated)
    verdicts = []
    for check in subject.checks:
        try:
            answer = ask(server, check, side.program)
            problems, shown = check.judge(answer, context), answer_shown(check, answer)
        except ServerError as error:
            problems, shown = [f"server error: {error}"], ""
        verdicts.append(Verdict(server.name, subject.name, check.name, side.name, tuple(problems), shown))
    return verdicts


def judge_subject(server_name: str, subject: Subject, sides: Sequence[Side]) -> list[Verdict]:
    """Every check of the subject on both sides through the server ``server_name``: one process
    for both sides, or one per side when their environments differ."""
    groups = [list(sides)] if subject.one_server else [[side] for side in sides]
    verdicts = []
    for group in groups:
        python_path = tuple(dict.fromkeys(p for side in group for p in side.python_path))
        server = LanguageServer(server_name, group[0].program.parent, python_path)
        try:
            for side in group:
                verdicts += judge_side(server, subject, side)
        finally:
            server.close()
    return verdicts


class Verdicts:
    """Each server's verdicts on one subject, judged on first use: a test module starts each server
    (once per environment) when its first test asks for that server, and closes it when done."""

    def __init__(self, subject: Subject, sides: Sequence[Side]):
        self.subject = subject
        self.sides = sides
        self._found: dict[str, dict[tuple[str, str], Verdict]] = {}

    def of(self, server: str, check: Check, side: str) -> Verdict:
        if server not in self._found:
            verdicts = judge_subject(server, self.subject, self.sides)
            self._found[server] = {(v.check, v.side): v for v in verdicts}
        return self._found[server][check.name, side]


def markdown_table(verdicts: Sequence[Verdict]) -> str:
    """The table: one row per server, subject and check, with ours' and the peer's verdict."""
    rows: dict[tuple[str, str, str], dict[str, Verdict]] = {}
    for verdict in verdicts:
        rows.setdefault((verdict.server, verdict.subject, verdict.check), {})[verdict.side] = verdict
    lines = ["| server | subject | check | ours | peer |", "|---|---|---|---|---|"]
    for (server, subject, check), sides in rows.items():
        cells = [describe(sides.get(side)) for side in ("ours", "peer")]
        lines.append(f"| {server} | {subject} | {check} | {cells[0]} | {cells[1]} |")
    count = {side: sum(v.passed for v in verdicts if v.side == side) for side in ("ours", "peer")}
    worse = len([s for s in rows.values() if s["peer"].passed and not s["ours"].passed])
    lines.append("")
    lines.append(
        f"ours passes {count['ours']} of {len(rows)} checks, the peer {count['peer']}; "
        f"{worse} pass for the peer and fail for ours."
    )
    return "\n".join(lines)


def describe(verdict: Verdict | None) -> str:
    if verdict is None:
        return "-"
    return "pass" if verdict.passed else "FAIL: " + "; ".join(p.replace("|", "\\|") for p in verdict.problems)


def subjects(base: Path, with_tvm: bool) -> list[tuple[Subject, tuple[Side, Side]]]:
    """The subjects with their sides written under ``base`` (tvm only when asked and installed)."""
    found = [(TESTING, generated_sides(base / "testing"))]
    if with_tvm and tvm_installed():
        found.append((TVM, tvm_sides(base / "tvm")))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", nargs="*", default=list(SERVERS), choices=list(SERVERS))
    parser.add_argument("--no-tvm", action="store_true", help="leave out tvm with its stubs")
    parser.add_argument("--json", type=Path, help="also write every verdict here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="editor-checks-") as folder:
        found = subjects(Path(folder), with_tvm=not args.no_tvm)
        verdicts = [v for s in args.servers for subject, sides in found for v in judge_subject(s, subject, sides)]
    print(markdown_table(verdicts))
    if args.json:
        args.json.write_text(json.dumps([v.__dict__ | {"passed": v.passed} for v in verdicts], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
