"""Replays one scenario: every property that checks it, and, where the scenario carries a
reference trace (``flink_observed`` or ``expected``), a comparison of the implementation's
observations with it. Used by ``streamproof replay``, the pytest plugin and tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from streamproof.properties import registry
from streamproof.properties.scenario import Scenario
from streamproof.properties.verdict import Verdict

REFERENCE_FIELDS = ("flink_observed", "expected")  # the traces a scenario may carry


class NothingToCheck(LookupError):
    """No registered property checks the scenario's family."""

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class TraceFormat:
    """How a family's observations are produced and compared with a reference trace.

    ``run(steps)`` is the implementation's whole trace (independent of where a property stopped);
    ``same(a, b)`` compares two traces as the family's vectors are compared (timers: ties as
    sets, error texts ignored); ``difference(a, b)`` says where they part, in one line.
    """

    run: Callable[[tuple], list]
    same: Callable[[list, list], bool]
    difference: Callable[[list, list], str]


def _timers_format() -> TraceFormat:
    from streamproof.properties.timers.runner import difference, run_impl, same_trace

    return TraceFormat(run_impl, same_trace, difference)


def _mailbox_format() -> TraceFormat:
    from streamproof.properties.mailbox.runner import difference, run_impl, same_trace

    return TraceFormat(run_impl, same_trace, difference)


def _valve_format() -> TraceFormat:
    from streamproof.properties.valve.runner import difference, run_vector_steps, same_trace

    return TraceFormat(run_vector_steps, same_trace, difference)


def _chain_watermark_format() -> TraceFormat:
    from streamproof.properties.chain_watermark.runner import difference, run_impl, same_trace

    return TraceFormat(lambda steps: run_impl(steps, "flink-2.3"), same_trace, difference)


# Families whose observations can be compared with a reference trace (one entry per family).
TRACE_FORMATS: dict[str, Callable[[], TraceFormat]] = {
    "timers": _timers_format,
    "mailbox": _mailbox_format,
    "valve": _valve_format,
    "chain_watermark": _chain_watermark_format,
}


@dataclass
class ReplayResult:
    """The outcome of replaying one scenario.

    ``observed`` is the implementation's observations as the first property saw them (up to
    where it stopped when it failed); ``matches_expected`` is None when the scenario carries no
    reference trace or its family cannot be compared yet, else whether the implementation's whole
    trace equals every reference trace it carries.
    """

    family: str
    verdicts: list[Verdict]
    observed: list
    matches_expected: bool | None
    holds: bool
    name: str | None = None
    compared_with: list[str] = field(default_factory=list)
    mismatch: str | None = None  # where the trace departs from the reference, when it does

    @property
    def verdict(self) -> str:
        return "held" if self.holds else "failed"

    def failure(self) -> str | None:
        """One line saying why the replay failed (the first failure), or None."""
        for v in self.verdicts:
            if not v.holds:
                where = f"step {v.step}: " if v.step is not None else ""
                return f"{v.invariant}: {where}{v.message}"
        if self.matches_expected is False:
            return f"matches-expected: {self.mismatch}"
        return None

    def to_json(self, file: str | None = None) -> dict:
        out: dict = {}
        if file is not None:
            out["file"] = file
        if self.name is not None:
            out["name"] = self.name
        out.update(family=self.family, verdict=self.verdict, observed=self.observed, properties=[
            {"property": v.property, "verdict": v.verdict, "invariant": v.invariant,
             "message": v.message, "step": v.step}
            for v in self.verdicts
        ])
        if self.matches_expected is not None:
            out.update(matches_expected=self.matches_expected, compared_with=self.compared_with)
            if self.mismatch is not None:
                out["mismatch"] = self.mismatch
        return out


def properties_for(scenario: Scenario) -> list[registry.Property]:
    """The scenario's own property if it names one, else every property of its family."""
    if scenario.property is not None:
        prop = registry.get(scenario.property)  # UnknownProperty when not registered
        if prop.family != scenario.family:
            raise NothingToCheck(f"property {prop.name!r} checks family {prop.family!r}, "
                                 f"not {scenario.family!r}")
        return [prop]
    props = registry.for_family(scenario.family)
    if not props:
        raise NothingToCheck(f"no property checks family {scenario.family!r} yet")
    return props


def _check(prop: registry.Property, scenario: Scenario) -> Verdict:
    """``prop.check``; an exception out of the implementation is a failed verdict, not a crash."""
    try:
        return prop.check(scenario)
    except Exception as e:  # noqa: BLE001 - reported as the property's failure
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        return Verdict(prop.name, False, [], f"crash: {type(e).__name__}", text[:500])


def replay(scenario: Scenario) -> ReplayResult:
    """Checks ``scenario`` with its properties and compares it with its reference traces.

    Raises :class:`streamproof.properties.registry.UnknownProperty` when the scenario names an unknown
    property and :class:`NothingToCheck` when no property checks its family.
    """
    verdicts = [_check(prop, scenario) for prop in properties_for(scenario)]
    observed = verdicts[0].observed
    references = [(name, getattr(scenario, name)) for name in REFERENCE_FIELDS
                  if getattr(scenario, name) is not None]
    matches, mismatch, compared = None, None, []
    make_format = TRACE_FORMATS.get(scenario.family)
    if references and make_format is not None:
        fmt = make_format()
        try:
            whole = fmt.run(scenario.steps)
        except Exception as e:  # noqa: BLE001 - the implementation crashed: no trace to compare
            first = str(e).splitlines()[0] if str(e) else ""
            whole, mismatch = None, f"the implementation crashed: {type(e).__name__}: {first}"[:500]
        matches = whole is not None
        for name, reference in references:
            compared.append(name)
            if whole is not None and not fmt.same(whole, list(reference)):
                matches = False
                mismatch = mismatch or f"{name} differs at {fmt.difference(whole, list(reference))}"
    holds = all(v.holds for v in verdicts) and matches is not False
    return ReplayResult(scenario.family, verdicts, observed, matches, holds, scenario.name, compared, mismatch)
