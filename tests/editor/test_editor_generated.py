"""What an editor shows for the package generated for ``libtvm_ffi_testing.so``, beside
``tvm_ffi.testing``'s hand-written classes for the same types (issue 35): the four language
servers (basedpyright, pyright, jedi-language-server, pylsp) over stdio, asked for completion,
hover, signature help and definition in a user's program outside the repository.

Each server starts once for this module (its first test starts it) and serves both sides.
``python tests/editor/editor_checks.py`` prints the whole table of verdicts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from editor_asserts import assert_at_least_as_good_as_the_peer, assert_shows_what_a_user_needs
from editor_checks import TESTING, TESTING_CHECKS, Check, Verdicts
from editor_workspace import generated_sides
from lsp_client import SERVERS

pytestmark = pytest.mark.slow

CASES = [pytest.param(server, check, id=f"{server}-{check.name}") for server in SERVERS for check in TESTING_CHECKS]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Verdicts:
    base: Path = tmp_path_factory.mktemp("editor-generated")
    return Verdicts(TESTING, generated_sides(base))


@pytest.mark.parametrize(("server", "check"), CASES)
def test_at_least_as_good_as_the_peer(verdicts: Verdicts, server: str, check: Check) -> None:
    assert_at_least_as_good_as_the_peer(verdicts, server, check)


@pytest.mark.parametrize(("server", "check"), CASES)
def test_shows_what_a_user_needs(verdicts: Verdicts, server: str, check: Check) -> None:
    assert_shows_what_a_user_needs(verdicts, server, check)
