"""Registers the chain-watermark property."""

from __future__ import annotations

from streamproof.properties.chain_watermark.check import PROPERTY, check_chain_watermark
from streamproof.properties.registry import Property, register


def _machine():
    from streamproof.properties.chain_watermark.machine import ChainWatermarkMachine
    return ChainWatermarkMachine


def _check(scenario):
    return check_chain_watermark(scenario.steps, scenario.params.get("mode", "flink-2.3"), PROPERTY)


CHAIN_WATERMARK_DIFFERENTIAL = register(Property(
    name=PROPERTY,
    family="chain_watermark",
    summary="Two MailboxWatermarkProcessors chained A -> B over one mailbox fire timers, interrupt, "
            "continue and emit watermarks exactly as the model says, in Flink 2.3's mode and in the "
            "corrected one; watermarks never decrease, and in corrected mode strictly increase.",
    check=_check,
    machine=_machine,
    reachability=(
        "advance interrupted",
        "interrupted after the last due timer",
        "watermark arrived while a continuation was pending",
        "B emitted the same watermark twice",
        "corrected mode emitted an intermediate watermark",
    ),
))
