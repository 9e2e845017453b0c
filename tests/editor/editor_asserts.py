"""The two assertions each editor check makes, and the test cases they run on, shared by the test
modules of both subjects. What ours does not show yet is a ``Gap``: an expected failure with its
reason, in the comparison with the peer only where the peer passes the check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest
from editor_checks import Check, Verdicts
from lsp_client import SERVERS


@dataclass(frozen=True)
class Gap:
    """What ours does not show yet at one (server, check), and why."""

    reason: str
    #: the peer passes the check: ours is worse than the peer there, not only short of what a
    #: user needs
    peer_passes: bool = False


def cases(checks: Sequence[Check], gaps: Mapping[tuple[str, str], Gap], against_the_peer: bool) -> list[object]:
    """Every server and check as a test case; a known gap is an expected failure (in the
    comparison with the peer only where the peer passes: elsewhere that test passes)."""
    found: list[object] = []
    for server in SERVERS:
        for check in checks:
            gap = gaps.get((server, check.name))
            if gap is not None and against_the_peer and not gap.peer_passes:
                gap = None
            marks = [pytest.mark.xfail(reason=gap.reason, strict=False)] if gap else []
            found.append(pytest.param(server, check, id=f"{server}-{check.name}", marks=marks))
    return found


def assert_at_least_as_good_as_the_peer(verdicts: Verdicts, server: str, check: Check) -> None:
    """Where the peer's answer passes the check, ours passes it too."""
    peer = verdicts.of(server, check, "peer")
    ours = verdicts.of(server, check, "ours")
    if peer.passed:
        assert ours.passed, f"{server}, {check.name}: the peer passes, ours shows: {'; '.join(ours.problems)}"


def assert_shows_what_a_user_needs(verdicts: Verdicts, server: str, check: Check) -> None:
    """Ours passes the check (whatever the peer does); the message says how the peer fared."""
    ours = verdicts.of(server, check, "ours")
    peer = verdicts.of(server, check, "peer")
    peer_says = "passes" if peer.passed else "fails too: " + "; ".join(peer.problems)
    assert ours.passed, f"{server}, {check.name}: {'; '.join(ours.problems)} (the peer {peer_says})"
