"""A reflected auto-init takes the parameters its native ``__ffi_init__`` takes (issue 18, item 9).

Apache TVM's ``ir.PrimType("int32")`` failed with "unexpected keyword argument 'span'": the
type's auto-init was built before its base's ``span`` field was registered, so it does not take
it, yet the generated ``__init__`` offered and sent it. ``tests/fixtures/late_base.cc`` mirrors
that: ``Early`` registers before ``Base``'s field, ``Late`` after it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.registry.snapshot_process import take_snapshot

from conftest import ROOT, build_shared

FIXTURE = ROOT / "tests" / "fixtures" / "late_base.cc"


@pytest.fixture(scope="module")
def late_lib() -> Path:
    return build_shared("late_base", FIXTURE.read_text())


@pytest.fixture(scope="module")
def lbpkg(late_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the generated package ``lbpkg``."""
    root = tmp_path_factory.mktemp("late_base")
    assert main([str(late_lib), "-o", str(root / "lbpkg"), "-q"]) == 0
    return root


def _run(lbpkg: Path, script: str, pure: bool, **env: str) -> list[str]:
    """The lines ``script`` prints in a child with ``lbpkg`` importable, on the compiled or the
    pure backend (``env``: more environment variables)."""
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(lbpkg), str(ROOT / "runtime")]), **env}
    child_env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        child_env["TVMFFI_RUNTIME_PURE"] = "1"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=child_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_snapshot_records_inherited_fields_the_auto_init_does_not_take(late_lib: Path) -> None:
    types = {t.type_key: t for t in take_snapshot(late_lib).types}
    assert types["latebase.Early"].init_excluded == ["span"]
    assert types["latebase.Late"].init_excluded == []
    assert types["latebase.Base"].init_excluded == []


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_constructor_offers_only_what_the_native_init_takes(lbpkg: Path, pure: bool) -> None:
    script = textwrap.dedent(
        """\
        import inspect
        from lbpkg.latebase import Early, Late
        print(inspect.signature(Early))
        print(inspect.signature(Late))
        e = Early("int32")
        print(repr(e.dtype), repr(e.span))
        late = Late("int8", span="here")
        print(repr(late.dtype), repr(late.span), repr(Late("int8").span), list(late.tags))
        """
    )
    assert _run(lbpkg, script, pure) == [
        "(dtype: 'str') -> 'None'",
        "(dtype: 'str', span: 'str' = '', tags: '_abc.Sequence[str]' = ...) -> 'None'",
        "'int32' ''",
        "'int8' 'here' '' []",
    ]


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_omitted_arguments_take_the_native_default_of_the_loaded_library(lbpkg: Path, pure: bool) -> None:
    """An omitted argument is not sent: a library whose default changed since the package was
    generated applies its own (the signature keeps showing the registry's default it was
    generated from)."""
    moved = build_shared("late_base", FIXTURE.read_text(), extra=['-DLATE_SPAN_DEFAULT="moved"'])
    script = textwrap.dedent(
        """\
        import inspect
        from lbpkg.latebase import Base, Late
        print(inspect.signature(Late).parameters["span"])
        print(Late("int8").span, Base().span, Late("int8", "").span == "", Late("i", span="s").span)
        """
    )
    assert _run(lbpkg, script, pure, LBPKG_LIBRARY=str(moved)) == ["span: 'str' = ''", "moved moved True s"]


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_replace_refuses_to_drop_a_field_the_auto_init_does_not_take(lbpkg: Path, pure: bool) -> None:
    """``replace`` of a read-only field rebuilds through the auto-init (issue 20); an inherited
    field it does not take would be lost, so that is a TypeError naming the field."""
    script = textwrap.dedent(
        """\
        from lbpkg.latebase import Early, Late
        late = Late("int8", span="here")
        changed = late.replace(dtype="int16")
        print(changed.dtype, changed.span, late.dtype)
        try:
            Early("int32").replace(dtype="int8")
        except TypeError as exc:
            print(exc)
        """
    )
    assert _run(lbpkg, script, pure) == [
        "int16 here int8",
        "Early.replace(): field 'dtype' is read-only, and latebase.Early's auto-init does not take"
        " field 'span' (a rebuilt object would lose its value)",
    ]


def test_jedi_shows_a_factory_default_as_the_native_default(lbpkg: Path) -> None:
    # jedi shows a default as its source text: the module's .pyi face's, where a default the
    # registry cannot spell as a literal (a factory, an object) is ``...``, as help() and
    # inspect.signature show it (the .py, whose __init__ has a body, passes
    # ``_bind.NATIVE_DEFAULT``, the library's own default)
    jedi = pytest.importorskip("jedi")
    source = "from lbpkg.latebase import Late\nLate("
    project = jedi.Project(str(lbpkg), added_sys_path=[str(lbpkg), str(ROOT / "runtime")])
    signatures = jedi.Script(source, path=str(lbpkg / "prog.py"), project=project).get_signatures(2, 5)
    text = signatures[0].to_string()
    assert "tags: Sequence[str]=..." in text, text
