"""A change the door gave up on (its deadline passed while the rank store did not answer)
is never committed later, and one already being committed says so (`Ticket`)."""

from __future__ import annotations

from configbags.serve.ranks import Ticket


def test_a_ticket_abandoned_before_its_commit_is_never_committed() -> None:
    ticket = Ticket()
    assert ticket.abandon() and ticket.abandoned
    assert not ticket.commit()  # the source rank aborts it on every rank


def test_a_ticket_being_committed_cannot_be_abandoned() -> None:
    ticket = Ticket()
    assert ticket.commit()
    assert not ticket.abandon() and not ticket.abandoned  # the door says it may be applied
