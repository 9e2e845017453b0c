"""The ``ir`` fixture of the structural engine tests (test_structural_walk.py,
test_structural_visit_map_mutate.py): the ``exprir`` expression IR (tests/fixtures/expr_ir.cc),
built once on disk and loaded once per process."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures import load_expr_ir


@pytest.fixture(scope="module")
def ir(have_gxx: bool) -> Any:
    return load_expr_ir()
