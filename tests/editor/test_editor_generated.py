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
from editor_asserts import Gap, assert_at_least_as_good_as_the_peer, assert_shows_what_a_user_needs, cases
from editor_checks import TESTING, TESTING_CHECKS, Check, Verdicts
from editor_workspace import generated_sides

pytestmark = pytest.mark.slow

_PYLSP_FIELDS = Gap("pylsp shows no type and no read-only mark for any attribute, the peer's included")
#: What ours does not show yet, by (server, check): each an expected failure with its reason.
KNOWN_GAPS = {
    ("pylsp", "completion: fields and methods with their types"): _PYLSP_FIELDS,
    ("pylsp", "completion: read-only field shown read-only"): _PYLSP_FIELDS,
    ("pylsp", "completion: inherited and container fields"): _PYLSP_FIELDS,
    ("pylsp", "hover: read-only field shows its type, read-only"): _PYLSP_FIELDS,
    ("pylsp", "hover: field shows its type and the registry's doc"): Gap(
        "pylsp's hover on a field shows its value type's docs (int's), the peer's too"
    ),
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Verdicts:
    base: Path = tmp_path_factory.mktemp("editor-generated")
    return Verdicts(TESTING, generated_sides(base))


@pytest.mark.parametrize(("server", "check"), cases(TESTING_CHECKS, KNOWN_GAPS, against_the_peer=True))
def test_at_least_as_good_as_the_peer(verdicts: Verdicts, server: str, check: Check) -> None:
    assert_at_least_as_good_as_the_peer(verdicts, server, check)


@pytest.mark.parametrize(("server", "check"), cases(TESTING_CHECKS, KNOWN_GAPS, against_the_peer=False))
def test_shows_what_a_user_needs(verdicts: Verdicts, server: str, check: Check) -> None:
    assert_shows_what_a_user_needs(verdicts, server, check)
