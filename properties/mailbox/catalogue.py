"""Registers the task-mailbox properties."""

from __future__ import annotations

from streamproof.properties.mailbox.check import check_mailbox
from streamproof.properties.registry import Property, register


def _machine():
    from streamproof.properties.mailbox.machine import MailboxMachine
    return MailboxMachine


def _check(scenario):
    return check_mailbox(scenario.steps, "mailbox.differential")


MAILBOX_DIFFERENTIAL = register(Property(
    name="mailbox.differential",
    family="mailbox",
    summary="The task mailbox takes, batches, yields, interrupts and closes exactly as the model "
            "says: same observations, same mails in the same order, urgent mail first, no mail "
            "lost or duplicated.",
    check=_check,
    machine=_machine,
    reachability=(
        "urgent mail overtook a batch",
        "priority hid an earlier mail",
        "priority hid every mail",
        "deferrable mail invisible to yield",
        "batch empty while new mail waits",
        "should_interrupt for mail the executor cannot take",
        "mail taken from a quiesced mailbox",
        "put refused after quiesce",
        "take refused after close",
        "close dropped mail",
    ),
))
