"""A one-stage job runs as its one-operator job graph on the one job runtime
(``impl.graph.sim.graph_spec_of``): it keeps what certification reads of a one-stage run
(exactly-once output, the lineage of every input element, per key-group histories, timer metrics),
checked against the model on random jobs and on replays of a run's own lineage."""

import dataclasses
from collections import Counter

from hypothesis import HealthCheck, event, given, settings

from streamproof.impl.graph.job_runtime import GraphJob
from streamproof.impl.graph.sim import graph_spec_of, simulate
from streamproof.properties.job.catalogue import job_scenarios
from streamproof.properties.job.check import _spec, model_reference
from streamproof.properties.job.steps import faults_of, job_params

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(job_scenarios())
def test_the_one_operator_graph_commits_the_model_reference_under_faults(scenario):
    seed, faults = job_params(scenario)["seed"], faults_of(scenario)
    run = simulate(_spec(scenario, None), seed, faults)
    event(f"failovers: {min(run.failovers, 2)}")
    assert Counter(run.committed) == model_reference(scenario)


def _replay(spec, lineage):
    """A failure-free replay of ``lineage``, as certification makes it."""
    return dataclasses.replace(spec, forced_lineage=lineage, channel_capacity=10**9, checkpoint_interval=10**9,
                               parallelism=len(lineage))


@SETTINGS
@given(job_scenarios())
def test_a_replay_of_a_runs_lineage_gives_the_same_histories(scenario):
    """The lineage of every input element a run recorded, replayed without faults, consumes the
    input in that order: the same lineage, the same per key-group histories, the same output and
    the same timers fired before the end of input."""
    seed = job_params(scenario)["seed"]
    spec = _spec(scenario, False)
    recorded = simulate(spec, seed)
    assert recorded.lineage is not None
    replayed = simulate(_replay(spec, recorded.lineage), seed)
    assert replayed.lineage == recorded.lineage
    assert replayed.histories == recorded.histories
    assert Counter(replayed.committed) == Counter(recorded.committed)
    assert replayed.timers_before_end == recorded.timers_before_end
    assert replayed.event_timers_before_end == recorded.event_timers_before_end
    event(f"timers fired before the end: {bool(recorded.timers_before_end)}")


def test_a_restore_brings_back_histories_lineage_and_timers():
    """A failure after a checkpoint with timers pending: the restored tasks inherit the lineage
    and histories their snapshots had, and count the timers they restored."""
    from streamproof.impl.graph.job import JobSpec
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord
    from streamproof.impl.graph.sim import Fault
    from streamproof.impl.tasks.stream_task import Watermark

    class Remind(KeyedProcessFunction):
        def process_element(self, value, ctx, out):
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)

        def on_timer(self, timestamp, ctx, out):
            out.collect((ctx.get_current_key(), timestamp))

    elements = [StreamRecord(k, k, t) for t, k in enumerate("abcdabcd")] + [Watermark(20)]
    spec = JobSpec([elements], Remind, parallelism=2, checkpoint_interval=3)
    run = simulate(spec, 7, (Fault("fail", at=25, checkpoints=1),))
    assert run.failovers == 1 and run.restored_timers > 0 and run.snapshots_with_timers > 0
    assert run.lineage is not None and any(run.histories.values())
    replay = simulate(_replay(spec, run.lineage), 7)
    assert replay.histories == run.histories
    assert Counter(run.committed) == Counter(replay.committed) == Counter((k, t + 5) for t, k in enumerate("abcdabcd"))


def test_the_graph_is_source_keyed_operator_and_chained_sink():
    from streamproof.impl.graph.job import JobSpec
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction

    spec = graph_spec_of(JobSpec([[], []], KeyedProcessFunction, parallelism=3))
    assert [(c.operators, c.parallelism) for c in spec.graph.chains] == [
        (("source",), 2), (("keyed-process", "sink"), 3)]
    assert spec.histories and spec.watermark_mode == "flink-2.3"
    assert isinstance(GraphJob(spec), GraphJob)
