"""The ``chain_watermark`` family for ``streamproof conform``: scenarios of the family's state
machine, restricted to Flink 2.3's mode (the harness drives Flink's processor as shipped), run on
Flink's ``MailboxWatermarkProcessor`` (``ChainWatermarkHarness.java``), the implementation and the
model. The ``corrected`` mode differs from Flink on purpose (no repeated watermark, intermediate
watermarks) and is never compared with it.

``properties/`` may not import ``streamproof.conformance`` (DESIGN.md §1, tests/test_layout.py), so
:func:`conform_family` takes the class to build: ``conform_family(ConformFamily)`` in
``streamproof/conformance/conform.py``. Without it, it returns a :class:`Family` with the same
fields (what ``conform()`` reads).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

NAME = "chain_watermark"
MACHINE = "chain_watermark.differential"
MODE = "flink-2.3"


@dataclass(frozen=True)
class Family:
    """The fields of ``streamproof.conformance.conform.ConformFamily``."""

    name: str
    machine: str
    run_impl: Callable[[tuple], list]
    run_model: Callable[[tuple], list]
    same: Callable[[list, list], bool]
    difference: Callable[[list, list], str]
    restrict: Callable[[object], object | None] = lambda scenario: scenario


def restrict(scenario):
    """Every scenario of the family is drivable; Flink's mode only."""
    return replace(scenario, params={**scenario.params, "mode": MODE})


def conform_fields() -> dict:
    from streamproof.properties.chain_watermark.runner import difference, run_impl, run_model, same_trace

    return {"name": NAME, "machine": MACHINE,
            "run_impl": lambda steps: run_impl(steps, MODE), "run_model": lambda steps: run_model(steps, MODE),
            "same": same_trace, "difference": difference, "restrict": restrict}


def conform_family(make: type = Family):
    """The conformance family, built by ``make`` (pass ``ConformFamily``)."""
    return make(**conform_fields())
