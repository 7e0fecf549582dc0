"""A whole PyFlink job as written, run on streamproof's job-graph runtime with its own input
(:func:`streamproof.testing.for_job`): what each sink committed, for example-based tests of a job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamproof.testing.output import HarnessError, assert_output


@dataclass
class JobResult:
    """One run: per sink (by name), the values it committed, in commit order."""

    outputs: dict
    failovers: int
    steps: int

    @property
    def sinks(self) -> list[str]:
        return list(self.outputs)

    def output(self, sink: str | None = None) -> list:
        """The values ``sink`` committed (default: the job's only sink)."""
        if sink is None:
            if len(self.outputs) != 1:
                raise HarnessError(f"the job has {len(self.outputs)} sinks: name one of {', '.join(self.outputs)}")
            sink = next(iter(self.outputs))
        if sink not in self.outputs:
            raise HarnessError(f"no sink named {sink!r}: the job's sinks are {', '.join(self.outputs) or 'none'}")
        return list(self.outputs[sink])

    def assert_output(self, expected, sink: str | None = None, *, ordered: bool = False) -> None:
        """Compares a sink's committed values with ``expected``: as a multiset by default (the
        order across parallel subtasks is not Flink's to keep), ``ordered=True`` in order."""
        assert_output(list(expected), self.output(sink), None, ordered=bool(ordered),
                      what=f"sink {sink or self.sinks[0]!r}")


class JobHarness:
    """A captured job (a job file, a job module or a function building the job) and its input."""

    def __init__(self, target: Any, records: dict | None = None):
        from streamproof.properties.certify_job_runs import JobCertifyError, load_job

        try:
            self.subject = load_job(target, records)
        except JobCertifyError as e:
            raise HarnessError(str(e)) from None

    @property
    def sinks(self) -> list[str]:
        return [op.name for op in self.subject.built(1).graph.operators if not self.subject.built(1).graph.outputs(op.name)]

    def run(self, *, parallelism: int = 1, watermarks: Any = "each", interruptible_timers: bool = False,
            fail_after_checkpoints: int | None = None, seed: int = 0) -> JobResult:
        """Runs the job to the end of its input. ``watermarks``: ``"each"`` (the watermark
        generator emits after every record), ``"end"`` (only at the end of input), or per source
        subtask the record indexes after which it emits; ``fail_after_checkpoints=n``: a task fails
        once ``n`` checkpoints completed and the job restores (exactly-once sinks: the committed
        output must not change)."""
        from streamproof.impl.graph.sim import Fault
        from streamproof.properties.certify_job_runs import JobScenario, simulate

        written = self.subject.source_records
        if watermarks == "each":
            points = tuple(tuple(range(len(records))) for records in written)
        elif watermarks == "end":
            points = tuple(() for _ in written)
        elif isinstance(watermarks, (list, tuple)) and len(watermarks) == len(written):
            points = tuple(tuple(p) for p in watermarks)
        else:
            raise HarnessError(f"watermarks={watermarks!r}: 'each', 'end', or one list of record indexes per source "
                               f"subtask ({len(written)})")
        faults = () if fail_after_checkpoints is None else (Fault("fail", at=1, checkpoints=fail_after_checkpoints),)
        scenario = JobScenario(points, parallelism=parallelism, faults=faults, seed=seed, mail_rate=0.0)
        run = simulate(self.subject, scenario, interruptible=interruptible_timers)
        if isinstance(run, str):
            raise HarnessError(run)
        outputs: dict = {name: [] for name in self.sinks}
        for sink, value in run.raw:
            outputs.setdefault(sink, []).append(value)
        if fail_after_checkpoints is not None and not run.job.failovers:
            raise HarnessError(f"the job ended before {fail_after_checkpoints} checkpoints completed: no failure was "
                               "injected (give it more input or fewer checkpoints)")
        return JobResult(outputs, run.job.failovers, run.steps)

