"""The two assertions each editor check makes, shared by the test modules of both subjects."""

from __future__ import annotations

from editor_checks import Check, Verdicts


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
