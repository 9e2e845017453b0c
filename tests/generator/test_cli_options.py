"""Each option of ``tvmffi-gen`` is declared once (``cli/options.py``); what else names it is
derived: the parser, the refused combinations, the build's keys (setuptools, CMake, the step) and
the build step's command line and stamp key (docs/cli.md, docs/build-integration.md)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tvmffi_gen.cli.options import Options, declared, option_conflict, parser
from tvmffi_gen.integration.cmake import config_file, with_keywords
from tvmffi_gen.integration.options import build_keys, build_options, generator_arguments
from tvmffi_gen.integration.setuptools import ConfigError, read_config
from tvmffi_gen.integration.step import Step, step_key

#: a value of each shape of build option, as ``[tool.tvmffi-gen]`` gives it
_SAMPLE = {"switch": True, "value": "v", "list": ["a", "b"]}


def test_an_empty_command_line_parses_to_the_declared_defaults() -> None:
    assert Options.parse([]) == Options()
    parsed = Options.parse(["lib.so", "-o", "out", "--prefix", "a", "--prefix", "b", "--verify"])
    assert (parsed.library, parsed.output, parsed.prefix, parsed.verify) == ("lib.so", "out", ("a", "b"), "auto")


def test_every_declared_option_is_in_the_parser_under_its_field() -> None:
    dests = {a.dest for a in parser()._actions} - {"help", "version"}
    assert dests == {dest for dest, _ in declared()}


def test_the_options_stubs_refuse_are_those_declared_for_packages_only() -> None:
    package_only = [decl.name for _, decl in declared() if decl.runs == {"package"}]
    # checked by hand against the options a --stubs-for run does not read (run_stubs' parameters)
    assert package_only == [
        "LIBRARY",
        "--name",
        "--prefix",
        "--use",
        "--bundle",
        "--verify",
        "--project-version",
        "--runtime-requirement",
        "--portable",
        "--keep-edits",
        "--overwrite-edits",
        "--from-snapshot",
        "--save-snapshot",
    ]
    conflict = option_conflict(Options.parse(["--stubs-for", "tvm", "-o", "o", "--portable", "--use", "p"]))
    assert conflict == "--stubs-for writes stubs, not a package: --use, --portable does not apply to it"


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        (
            ["--list-exports", "l.so", "--prefix", "a"],
            "--list-exports LIB reads one library and writes nothing: --prefix",
        ),
        (["--list-exports", "l.so", "-q", "--timeout", "3"], None),
        (["-o", "o", "--no-cache"], "--no-cache is for the cache of --stubs-for PKG: give --stubs-for too"),
        (
            ["-o", "o", "--project-version", "1", "--runtime-requirement", "x"],
            "--project-version, --runtime-requirement: they are for --project's pyproject.toml: give --project too",
        ),
        (["-o", "o", "--project", "--project-version", "1"], None),
    ],
)
def test_a_run_refuses_the_options_it_does_not_read(argv: list[str], expect: str | None) -> None:
    conflict = option_conflict(Options.parse(argv))
    assert conflict == expect if expect is None else conflict is not None and conflict.startswith(expect)


def _step(tmp_path: Path, mode: str = "package", package: str = "pkg", options: tuple[str, ...] = ()) -> Step:
    return Step(
        mode="stubs" if mode == "stubs" else "package",
        library=tmp_path / "lib.so",
        package=package,
        destination=tmp_path / "dest",
        work=tmp_path / "work",
        options=options,
    )


def test_every_argument_the_step_gives_the_generator_is_in_its_stamp_key(tmp_path: Path) -> None:
    """Steps that differ in anything the generator is told (bar where it reads and writes) have
    different keys, and steps with one key tell it the same: the stamp cannot say "up to date"
    for a run that would write something else."""
    option_sets = [()] + [generator_arguments({b.key: _SAMPLE[b.shape]}, "test") for b in build_options()]
    steps = [
        _step(tmp_path, mode, package, options)
        for mode, package, options in itertools.product(["package", "stubs"], ["pkg", "other"], option_sets)
    ]
    snapshot = tmp_path / "registry.json"
    told = {}
    for step in steps:
        args, opts, out = step.generator_args(snapshot), step.generator_options(), step.work.resolve() / "out"
        if step.mode == "stubs":
            assert args == [*opts, "-o", str(out)]
        else:
            assert args == ["--from-snapshot", str(snapshot), "-o", str(out / step.package), *opts]
        told[step_key(step, "{}")] = opts
    assert len(told) == len({tuple(s.generator_options()) for s in steps}) == len(steps)


def test_each_build_option_reaches_the_generator_and_the_key(tmp_path: Path) -> None:
    options = list(build_options())
    assert [b.key for b in options] == build_keys() and "prefix" in build_keys()
    plain = _step(tmp_path)
    for build in options:
        given = _step(tmp_path, options=generator_arguments({build.key: _SAMPLE[build.shape]}, "test"))
        assert build.flag in given.generator_args(tmp_path / "r.json")
        assert step_key(given, "{}") != step_key(plain, "{}")
    assert generator_arguments({"prefix": "ns"}, "t") == ("--prefix", "ns")
    with pytest.raises(ValueError, match=r"here: prefix = 3: give a string or a list of strings"):
        generator_arguments({"prefix": 3}, "here")


def test_the_cmake_package_parses_the_declared_build_options() -> None:
    """Its keyword lists are those ``python -m tvmffi_gen.integration.cmake`` writes."""
    text = config_file().read_text(encoding="utf-8")
    assert with_keywords(text) == text, "run: python -m tvmffi_gen.integration.cmake"
    assert 'set(_tvmffi_gen_list_keywords "PREFIX")' in text


def test_setuptools_knows_the_declared_keys_and_names_them(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.tvmffi-gen]\npackage = "a"\nextension = "a._lib"\nprefixes = ["b"]\n')
    with pytest.raises(ConfigError) as info:
        read_config(pyproject)
    assert str(info.value).endswith(
        f"unknown key(s) prefixes (known: mode, package, extension, {', '.join(build_keys())})"
    )
    pyproject.write_text('[tool.tvmffi-gen]\npackage = "a"\nextension = "a._lib"\nprefix = 7\n')
    with pytest.raises(ConfigError, match="prefix = 7: give a string or a list of strings"):
        read_config(pyproject)


def test_the_step_takes_the_build_options_and_refuses_one_its_mode_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tvmffi_gen.integration.step import main

    where = ["--library", str(tmp_path / "lib.so"), "--package", "p", "--destination", "d", "--work", str(tmp_path)]
    assert main(["stubs", *where, "--sources", str(tmp_path), "--prefix", "a"]) == 2
    assert capsys.readouterr().err == "tvmffi-gen: error: --prefix: not an option of stubs mode\n"
    assert list(tmp_path.iterdir()) == []
