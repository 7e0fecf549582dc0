"""``streamproof explain``: a counterexample a person can read.

Replays a scenario on the implementation, turns what the run recorded into timeline rows
(one lane per subtask, plus ``JM`` for the job manager / coordinator), and renders them as text or
as a self-contained HTML page (``streamproof/templates/``). The row where the property's invariant
broke is marked and the verdict's message printed beside it; the family's reference (what its
checker compares with) is printed after the timeline.

What a family records decides what a timeline can show:

* ``job`` (one-stage jobs and job graphs) and ``termination`` run the job simulator
  (:class:`~streamproof.impl.graph.sim.SimulationResult`). Its per-task output logs are not stamped
  with a global order, so :func:`~streamproof.explain.build.explain` runs the scenario once more,
  exactly as the family's checker does, with a *passive* recorder: every output-log / event /
  bookkeeping entry is numbered as it is appended, and records in, watermarks in, end of input and
  sink commits are noted by wrappers that call the original method unchanged. Nothing the simulator does or
  returns changes (the recorded run is compared with the checker's; a difference is reported).
  Given a plain :class:`SimulationResult` (``timeline_html(scenario, result, verdict)``), rows
  are grouped per attempt and per lane in log order, without an order across lanes.
* ``valve_job`` records the coordinator's log (completed checkpoints, failovers, errors) and each
  recipient's final state.
* Every other family (timers, mailbox, snapshots, valve, chain_watermark, extensions) has no job
  run: its steps are drawn in one lane, with the verdict, and the implementation's observations.

The package, one job per module:

* :mod:`~streamproof.explain.timeline`: a timeline as data (rows, lanes, verdicts) and marking the
  row where the invariant broke;
* :mod:`~streamproof.explain.build`: a scenario replayed and drawn as a timeline
  (:func:`~streamproof.explain.build.explain`, :func:`~streamproof.explain.build.build_timeline`);
* :mod:`~streamproof.explain.recorder`: the passive recorder of a job run;
* :mod:`~streamproof.explain.job_families`: the timeline of the ``job`` and ``termination`` families;
* :mod:`~streamproof.explain.certify_job`: the timeline of a job certification counterexample;
* :mod:`~streamproof.explain.render`: text and HTML rendering of a timeline.

Here: the two one-call entry points, replayed and rendered: :func:`timeline_html` (a page) and
:func:`failure_fragment` (the campaign report's hook).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from markupsafe import Markup

from streamproof.explain.build import build_timeline, explain
from streamproof.explain.render import render_html, timeline_fragment
from streamproof.properties.scenario import Scenario


def failure_fragment(scenario_json: str, inject: str | None = None, anchor: str | None = None) -> Markup:
    """The timeline fragment of a scenario (JSON text) replayed with bug-zoo variant ``inject``
    applied: the campaign report's ``explain`` hook (no row id: a report embeds several)."""
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.scenario import load_scenario

    scenario = load_scenario(scenario_json)
    with get_variant(inject).patch() if inject else nullcontext():
        timeline = explain(scenario)
    timeline.injected = inject
    return timeline_fragment(timeline, anchor)


def timeline_html(scenario: Scenario, result: Any = None, verdict: Any = None) -> str:
    """A self-contained HTML page of ``scenario``'s timeline, for reports and certificates to embed.
    ``result``: the family's run (``SimulationResult``, a valve job's pipeline) or None to run it
    with the recorder; ``verdict``: a ``ReplayResult`` or ``Verdict``, or None to replay."""
    return render_html(build_timeline(scenario, result, verdict))
