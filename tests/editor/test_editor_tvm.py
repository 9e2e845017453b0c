"""What an editor shows for ``tvm`` with the stubs ``tvmffi-gen --stubs-for tvm`` writes, beside
``tvm`` alone (issue 35; optional: skipped when apache-tvm is not installed). The same program runs
in two environments, one with the stubs on the path and one without, each with its own server
process; each server starts once per environment for this module.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from editor_asserts import assert_at_least_as_good_as_the_peer, assert_shows_what_a_user_needs
from editor_checks import TVM, TVM_CHECKS, Check, Verdicts
from editor_workspace import tvm_installed, tvm_sides
from lsp_client import SERVERS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not tvm_installed(), reason="apache-tvm is not installed (pip install apache-tvm to run these)"),
]

CASES = [pytest.param(server, check, id=f"{server}-{check.name}") for server in SERVERS for check in TVM_CHECKS]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Verdicts:
    base: Path = tmp_path_factory.mktemp("editor-tvm")
    return Verdicts(TVM, tvm_sides(base))


@pytest.mark.parametrize(("server", "check"), CASES)
def test_at_least_as_good_as_the_peer(verdicts: Verdicts, server: str, check: Check) -> None:
    assert_at_least_as_good_as_the_peer(verdicts, server, check)


@pytest.mark.parametrize(("server", "check"), CASES)
def test_shows_what_a_user_needs(verdicts: Verdicts, server: str, check: Check) -> None:
    assert_shows_what_a_user_needs(verdicts, server, check)
