"""Certification of a user's operator (``streamproof certify module:Class``, docs/certify.md).

The operator, a PyFlink ``KeyedProcessFunction`` (imports from ``streamproof.flink``, or a genuine
``pyflink`` one when apache-flink is installed) or one in the ``impl.operators`` style, runs in
random job scenarios built from the user's own records (1-3 sources, out-of-order and late
records, parallelism 1-3, aligned or unaligned checkpoints, failures, failures inside interrupted
timer firings, rescales, end of input with drain) with interruptible timers on. The properties and
their reference (Flink's exactly-once promise) are in :mod:`streamproof.properties.certify_checks`;
the input in :mod:`streamproof.properties.certify_input`. A certificate whose runs never fired a
timer before end of input or never produced output says "not exercised" and is not a pass.

This module explores the properties and judges them; loading the operator is
:mod:`streamproof.properties.certify_load`, the certificate :mod:`streamproof.properties.certify_report`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import re
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Callable

from streamproof.properties import certify_checks as checks
from streamproof.properties import certify_input as inputs
from streamproof.properties import certify_late, certify_runs
from streamproof.properties.certify_load import CertifyError, Subject, _one_line, load
from streamproof.properties.certify_probes import ENDLESS_TIMERS
from streamproof.properties.certify_records import InputError
from streamproof.properties.certify_report import (
    Certificate, _command, _replay_command, _source_info, _trace, _write_counterexample, check_out,
)
from streamproof.properties.explore import Exploration, Interrupted, explore
from streamproof.properties.registry import Property
from streamproof.properties.scenario import Scenario, ScenarioError, load_scenario
from streamproof.properties.verdict import Verdict

CHECKS = checks.CHECKS
FINDING_ARRIVAL_ORDER = checks.FINDING_ARRIVAL_ORDER


def properties_for(subject: Subject) -> list[Property]:
    """The certification properties of ``subject``, runnable by :func:`explore`."""
    def scenarios():
        return subject.scenarios()

    return [Property(prop, "job", f"certification of {subject.spec}: {checks.SUMMARIES[prop]}",
                     check=(lambda p: lambda scenario: checks.check(p, _named(subject, scenario)))(prop),
                     strategy=scenarios, reachability=checks.COVERAGE)
            for prop in CHECKS]


SEARCH_EXAMPLES = inputs.SEARCH_EXAMPLES
# per property, its planned search run before the random examples: (kind, name)
# (watermarks and end of input are checked on the restore search's scenarios: the same draws, runs
# cached, so they reach a mid-stream timer and a restore whatever the example count)
SEARCHES = {"certify.interruptible-timers": ("split", "split search"),
            "certify.same-output": ("restore", "restore search"),
            "certify.watermarks": ("restore", "restore search"),
            "certify.end-of-input": ("restore", "restore search")}


def planned_property(subject: Subject, prop: Property) -> Property | None:
    """The planned search of ``prop`` (:data:`SEARCHES`, else None): the same check on planned
    burst scenarios, each screening inputs of the user's strategy (or the built-in input's) with
    the operator alone for one whose split firing changes its output
    (:func:`certify_input.user_scenarios` with ``planned``)."""
    if prop.name not in SEARCHES:
        return None
    kind, name = SEARCHES[prop.name]
    return dataclasses.replace(prop, summary=f"{prop.summary} ({name})",
                               strategy=lambda: subject.planned_scenarios(kind))


def explore_search(subject: Subject, prop: Property, seed: int = 0, *,
                   progress: Callable[[int, bool], None] | None = None, database=None,
                   shrink="domain", drawn: list | None = None) -> Exploration | None:
    """The planned search of ``prop`` (:func:`planned_property`): :data:`SEARCH_EXAMPLES` scenarios
    from ``seed`` whatever the example count; None when it has none. ``drawn``: a list the
    scenarios checked are appended to (shrinking's too)."""
    planned = planned_property(subject, prop)
    if planned is None:
        return None
    if drawn is not None:
        check = planned.check
        planned = dataclasses.replace(planned, check=lambda scenario: drawn.append(scenario) or check(scenario))
    return explore(planned, SEARCH_EXAMPLES, seed=seed, progress=progress, shrink=shrink, database=database,
                   database_key=f"certify {subject.spec} {prop.name} {SEARCHES[prop.name][1]}")


def check_drawn(prop: Property, scenarios: list) -> Exploration | None:
    """``prop`` checked on the scenarios another property's search drew and held on (the same
    strategy and seed draw the same ones: no drawing again), as :func:`explore` would report it;
    None when one fails (explore it then, to minimise the counterexample)."""
    from streamproof.properties.reach import counting

    started, steps, reach_examples = time.perf_counter(), 0, Counter()
    with counting() as reach:
        for scenario in scenarios:
            before = Counter(reach)
            if not prop.check(scenario).holds:
                return None
            steps += len(scenario.steps)
            reach_examples.update(label for label, n in reach.items() if n > before.get(label, 0))
    return Exploration(prop.name, True, len(scenarios), steps, time.perf_counter() - started, dict(reach),
                       reach_examples=dict(reach_examples))


_SEARCH = object()  # explore_certification's default: run the planned search


def explore_certification(subject: Subject, prop: Property, examples: int, seed: int = 0, *,
                          progress: Callable[[int, bool], None] | None = None, database=None,
                          shrink="domain", search=_SEARCH) -> tuple[Exploration, Exploration | None]:
    """One certification property explored: first its planned search (:func:`explore_search`, or
    ``search`` when it already ran), so a refusal it finds does not depend on the example count,
    then, if that held, ``examples`` random scenarios. Returns ``(the verdict's exploration, the
    search's or None)``; the search's is the verdict's when it failed."""
    if search is _SEARCH:
        search = explore_search(subject, prop, seed, progress=progress, database=database, shrink=shrink)
    if search is not None and not search.holds:
        return search, search
    return explore(prop, examples, seed=seed, progress=progress, shrink=shrink, database=database,
                   database_key=f"certify {subject.spec} {prop.name}"), search


def _named(subject: Subject, scenario: Scenario) -> Scenario:
    if scenario.params.get("operator") == subject.name:
        return scenario
    return dataclasses.replace(scenario, params={**scenario.params, "operator": subject.name})


# -- pre-flight ----------------------------------------------------------------------------
_SIGNATURE = re.compile(r"(takes \d+ positional argument|missing \d+ required positional argument|"
                        r"got an unexpected keyword argument|object is not iterable|not callable)")


def preflight(subject: Subject) -> None:
    """One small failure-free job of a few records: bad input, a wrong signature, a callback that
    loops, floods or exits is one line here (exit 2), before any exploration."""
    from hypothesis.errors import NonInteractiveExampleWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        try:
            scenario = subject.scenarios().example()
        except InputError as e:
            raise CertifyError(f"{subject.spec!r}: {e}") from None
    steps = tuple(s for s in scenario.steps if type(s).__name__ in ("Record", "UserRecord", "SourceWatermark"))
    small = dataclasses.replace(scenario, steps=steps, params={**scenario.params, "parallelism": 1, "unaligned": False})
    endless = ENDLESS_TIMERS.get(subject.name)  # seen by a probe while the scenario was drawn
    result = certify_runs._run(small, False, 0) if endless is None else endless
    if isinstance(result, str) and result.startswith("TimerFiringBudgetExceeded") or endless is not None:
        raise CertifyError(f"{subject.spec!r}: its timers never stop firing: {_one_line(result)} (each firing "
                           "registers another due timer: at end of input, whose watermark makes every timer due, "
                           "a Flink job with bounded input would never finish)")
    if isinstance(result, str) and (_SIGNATURE.search(result) or _is_limit(result)):
        raise CertifyError(f"{subject.spec!r}: fails on a failure-free run of its first records: {_one_line(result)}")


def _is_limit(text: str) -> bool:
    return text.startswith(("CallbackLimitExceeded", "UserCodeError", "UnsupportedFeature"))


def certify(spec: str | Subject, examples: int, seed: int = 0, out: str | Path | None = None,
            command: str = "", on_result: Callable[[dict], None] | None = None,
            progress: Callable[[str, int, bool], None] | None = None, database=None) -> Certificate:
    """Explores every certification property of the operator (``spec``: what :func:`load`
    takes, or a loaded :class:`Subject`); counterexamples go to ``out`` (checked first:
    :func:`check_out`). ``on_result(result)`` is called as each property finishes (its row of the
    certificate, counterexample written); ``progress(property, examples_done, shrinking)`` as its
    exploration goes. ``database``: a Hypothesis example database whose failures of this operator
    are replayed first (:func:`explore`; the pytest fixture passes the active settings' one)."""
    from streamproof.impl.operators.user_code import release_callback_watchdog

    if out is not None:
        check_out(out)
    subject = spec if isinstance(spec, Subject) else load(spec)
    try:
        return _certify(subject, examples, seed, out, command, on_result, progress, database)
    finally:
        release_callback_watchdog()  # SIGALRM back to whoever had it (pytest-timeout, a Spark deadline)


def _certify(subject: Subject, examples: int, seed: int, out, command: str,
             on_result: Callable[[dict], None] | None = None,
             progress: Callable[[str, int, bool], None] | None = None, database=None) -> Certificate:
    from importlib import metadata

    import hypothesis

    preflight(subject)
    try:
        version = metadata.version("streamproof")
    except metadata.PackageNotFoundError:
        version = "unknown"
    cert = Certificate(subject.spec, examples, seed,
                       versions={"streamproof": version, "hypothesis": hypothesis.__version__,
                                 "python": platform.python_version()},
                       source=_source_info(subject.source_file),
                       command=command or _command(subject, examples, seed),
                       date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       input={**(subject.records.names if subject.records else {"records": "built-in (key, int, ts)"}),
                              "span": subject.span if subject.records is None else None, "args": subject.args})
    found: dict[str, int] = dict.fromkeys(FINDINGS, 0)  # per finding, the scenarios that met it
    broken = None  # a scenario on which the operator fails without any fault: every property reports it

    def on_progress(prop: Property):
        return None if progress is None else lambda n, shrinking: progress(prop.name, n, shrinking)

    def interrupted(prop: Property, stop: Interrupted) -> None:  # Ctrl-C: a counterexample found is kept
        stop.property, stop.scenario_file = prop.name, None
        if stop.exploration.scenario is not None and out is not None:
            stop.scenario_file = _write_counterexample(subject, prop.name, stop.exploration, out)

    # The planned searches first, those on the restore search's scenarios one after another: they
    # draw the same scenarios, whose runs the run cache then still holds for the next property.
    props = properties_for(subject)
    searches: dict[str, Exploration | None] = {}
    search_seconds: dict[str, float] = {}
    drawn: dict[str, list] = {}  # per kind of search, the scenarios of the first that held
    for prop in sorted(props, key=lambda p: SEARCHES.get(p.name, ("",))[0] != "restore"):
        started = time.perf_counter()
        kind = SEARCHES.get(prop.name, (None,))[0]
        try:
            # a later property on the same kind's scenarios checks them as drawn (without a database:
            # with one, its own saved failures come first)
            search = check_drawn(prop, drawn[kind]) if kind in drawn and database is None else None
            if search is None:
                scenarios: list = []
                search = explore_search(subject, prop, seed, progress=on_progress(prop), database=database,
                                        drawn=scenarios)
                if search is not None and search.holds and len(scenarios) == search.examples:
                    drawn.setdefault(kind, scenarios)
            searches[prop.name] = search
        except Interrupted as stop:
            interrupted(prop, stop)
            raise
        search_seconds[prop.name] = time.perf_counter() - started
    for prop in props:
        started = time.perf_counter() - search_seconds.get(prop.name, 0.0)
        search = None
        try:
            e = _known_failure(prop, broken)
            if e is None:
                e, search = explore_certification(subject, prop, examples, seed, progress=on_progress(prop),
                                                  database=database, search=searches.get(prop.name))
        except Interrupted as stop:
            interrupted(prop, stop)
            raise
        if e.invariant == "failure-free-run-finishes" and broken is None:
            broken = e.scenario
        if e.invariant == "crash: InputError":
            raise CertifyError(f"{subject.spec!r}: {e.message}")
        coverage = {c: e.reach_examples.get(c, 0) for c in checks.COVERAGE}  # examples that exercised c
        reached = e.reach_examples
        if search is not None and search is not e:  # the planned search held too: what it reached counts
            reached = {c: e.reach_examples.get(c, 0) + search.reach_examples.get(c, 0)
                       for c in {**e.reach_examples, **search.reach_examples}}
        for label in FINDINGS:
            found[label] += reached.get(label, 0)  # scenarios, not events
        if e.scenario is not None and not e.holds:  # the message of the minimised counterexample
            final = prop.check(e.scenario)
            if not final.holds and final.invariant == e.invariant:
                e.message = f"{final.invariant}: {final.message}"
        verdict, message = e.verdict, e.message or None
        unexercised = [c for c in checks.required(prop.name, reached) if not reached.get(c)]
        never_late = subject.records is not None and not subject.records.late
        if e.holds and unexercised == [checks.SPLIT_CASE] and never_late and \
                reached.get(checks.EVENT_TIMERS_MID_STREAM, 0) * 10 >= e.examples:
            # input that is never late (declared): no record of a key with a due timer came after
            # the watermark that made it due, though timers fired mid-stream in many scenarios
            unexercised = []
            message = (f"with input never behind its watermark (--no-late), no record of a key whose timer was due "
                       f"came after that watermark in {e.examples} scenarios (event-time timers fired mid-stream in "
                       f"{reached[checks.EVENT_TIMERS_MID_STREAM]}): split firings cannot change what this "
                       "operator sees")
        if e.holds and unexercised:
            verdict = "not exercised"
            message = (f"no scenario had a {' or a '.join(unexercised)}: this certificate would be vacuous; give "
                       + "; ".join(dict.fromkeys(_HINTS[u] for u in unexercised)))
        elif e.holds and prop.name == "certify.interruptible-timers" and not message and not reached.get(
                checks.EVENT_TIMERS_MID_STREAM):
            message = ("no event-time timer fired before end of input in any scenario: there was no firing to split "
                       "(FLIP-443 splits event-time firings only)")
        if e.invariant == "same-output-as-a-failure-free-run" and e.scenario is not None:
            message = f"{message}; cause: {checks.explain(e.scenario)}"
        path = trace = replay = None
        if e.scenario is not None and out is not None:
            path = _write_counterexample(subject, prop.name, e, out)
            replay = _replay_command(subject, path)
            trace = _trace(e.scenario)
        cert.results.append({"property": prop.name, "verdict": verdict, "examples": e.examples,
                             "seconds": time.perf_counter() - started, "invariant": e.invariant,
                             "message": message, "scenario_file": path, "replay": replay, "trace": trace,
                             "coverage": coverage})
        if search is not None:  # the planned search's own scenarios (the verdict's when it refused)
            cert.results[-1]["search"] = {
                "name": SEARCHES[prop.name][1], "examples": search.examples, "refused": not search.holds,
                "coverage": {c: search.reach_examples.get(c, 0) for c in checks.COVERAGE}}
        if on_result is not None:
            on_result(cert.results[-1])
    for label, (finding, hint) in FINDINGS.items():
        if found[label]:
            cert.findings.append({"finding": finding, "scenarios": found[label], "hint": hint})
    if out is not None:
        cert.write(Path(out))
    return cert


# the findings (reach labels of certify_checks and certify_late) a certificate reports apart: (what, why not a fault)
FINDINGS = {
    checks.FINDING_ARRIVAL_ORDER: (
        "output depends on arrival order across sources",
        "its failure-free runs of the same input differ between schedules; Flink does not order records of "
        "parallel sources, so this output differs between runs of a real job too. Not blamed on faults: such "
        "scenarios pass same-output when the committed output is one of the failure-free outputs."),
    certify_late.FINDING_LATE: (
        "output for late records depends on timing",
        "a record at or below its source's watermark changes the output depending on when it meets the timers "
        "(split firings, failover timing); Flink promises nothing there. Every property holds on the same scenarios "
        "without the late records. Use allowed lateness / side outputs for late data if it matters."),
    certify_late.FINDING_TIE_ORDER: (
        "output depends on the order of equal-timestamp timers",
        "timers of different keys with the same timestamp fire in an order Flink leaves open (a restore fires them "
        "key group by key group), and this operator's output changes with it (state outside keyed state, such as a "
        "field of the function). Not blamed on faults: the same faults with timers fired in key-group order "
        "throughout give a failure-free run's output."),
    checks.FINDING_RESTART_TIME: (
        "output depends on how long a restart takes (processing time)",
        "wall-clock time goes on while a job restarts: after a restore, processing-time timers came due or state TTL "
        "expired that a restart taking no time would have left alone. The committed output is the failure-free "
        f"output of the same input paused as long ({inputs.RESTART_GAP // 1000} s here), so it is not blamed on the "
        "faults; on Flink it differs between a run with failures and one without."),
    checks.FINDING_PROCESSING_TIME: (
        "output depends on the processing time timers fire at",
        "a split firing (FLIP-443) ends later in processing time, and the output reads the clock (a wall-clock "
        "stamp such as datetime.now(), or current_processing_time()): with processing time standing still the split "
        "and unsplit runs give the same output. When a timer fires in wall-clock time is Flink's to choose, with "
        "interruptible timers or without, so this is not blamed on the split."),
    checks.FINDING_WALL_CLOCK: (
        "output depends on the wall-clock time callbacks read",
        "a record replayed after a restore is processed at another time, and the output reads the clock "
        "(datetime.now(), time.time(): in certify the operator's processing time): with the clock the callbacks "
        "read frozen, the committed output is a failure-free run's. A replay in Flink stamps the time it runs at too."),
    checks.FINDING_FLOAT_STATE: (
        "output depends on Types.FLOAT() state precision across a restore",
        "PyFlink's Python state cache hands back the double a function wrote to Types.FLOAT() state; a checkpoint "
        "stores it in single precision and a restore reads that back, so results computed from it after a failure "
        "differ in their last digits (Apache Flink 2.3 does the same). Types.DOUBLE() state keeps them equal."),
}

_HINTS = {
    "timer fired before end of input": "records whose timestamps span the operator's time constants (--records, "
                                       "--stream, --span), so its timers fire mid-stream",
    "non-empty output": "records that make the operator emit (--records / --stream)",
    "failure after a checkpoint": "more records per scenario (--records / --stream), so checkpoints complete before "
                                  "failures",
    "restore with pending timers": "records whose timers are still pending at a checkpoint (timestamps spanning the "
                                   "operator's time constants)",
    checks.SPLIT_CASE: "records of several keys with timers due at one watermark and records of those keys after it "
                       "(more records per key: --records / --stream)",
}


def _known_failure(prop: Property, scenario: Scenario | None):
    """The exploration of ``prop`` on a scenario where the operator already failed without any
    fault, if it fails there too (no need to search again: same cause)."""
    from streamproof.properties.explore import Exploration

    if scenario is None:
        return None
    verdict = prop.check(scenario)
    if verdict.holds:
        return None
    return Exploration(prop.name, False, 1, len(scenario.steps), 0.0, {}, verdict.invariant,
                       f"{verdict.invariant}: {verdict.message}", dataclasses.replace(scenario, property=prop.name), {})


def replay(spec: str | Subject, path) -> list[Verdict]:
    """The certification verdicts of one scenario file (a counterexample) for the operator
    (its scenarios name it as ``user:SPEC``, known once it is loaded; the operator being
    certified runs it, whichever operator's counterexample it was). Every error names the file:
    :class:`ScenarioError` for an unreadable or malformed file, :class:`CertifyError` for a
    scenario that is not a job scenario (another family's)."""
    from streamproof.properties.scenario import load_scenario_file

    subject = spec if isinstance(spec, Subject) else load(spec)
    where = os.fspath(path)
    try:
        data = Path(where).read_bytes()
    except OSError:
        load_scenario_file(where)  # raises its one-line error naming the file
        raise
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        load_scenario_file(where)  # not a JSON object: its one-line error naming the file
        raise ScenarioError(f"{where}: not a scenario file")
    family = doc.get("family")
    if isinstance(family, str) and family != "job":
        raise CertifyError(f"{where}: a '{_one_line(family, 60)}' scenario, not a certification counterexample "
                           f"(a 'job' scenario); replay it with: streamproof replay {where}")
    if isinstance(doc.get("params"), dict):
        doc["params"]["operator"] = subject.name
    try:
        scenario = load_scenario(json.dumps(doc))
    except ScenarioError as e:
        raise e.with_prefix(where) from None
    return [prop.check(scenario) for prop in properties_for(subject)]


__all__ = ["Certificate", "CertifyError", "Subject", "certify", "check_out", "explore_certification", "explore_search",
           "load", "properties_for", "replay"]
