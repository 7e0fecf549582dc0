"""A finished task ends with its final checkpoint (FLIP-147): the first one snapshotted after its
input ended (Flink's ``StreamTask.finalCheckpointMinId``). An unaligned checkpoint snapshotted at
its first barrier, completing after the task read what followed that barrier and finished, is not
it: a later checkpoint that carried that snapshot for the terminated task, with source offsets
past what it lacks, lost the in-flight data the task had read after the barrier (here a
ProcessingTimeAdvance: the restored clock missed it)."""

from streamproof.impl.graph.job_runtime import GraphJob
from streamproof.impl.graph.job import JobSpec
from streamproof.impl.graph.sim import graph_spec_of
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction
from streamproof.impl.tasks.stream_task import ProcessingTimeAdvance, TaskConfig


class Nothing(KeyedProcessFunction):
    def process_element(self, value, ctx, out):
        pass


def _run_until_idle(task, stop=lambda: False):
    while task.is_runnable() and not stop():
        task.run_step()


def test_a_finished_task_waits_for_a_checkpoint_snapshotted_after_its_end():
    # source 0 sends an advance after checkpoint 1's barrier, then ends; source 1 ended before it
    spec = JobSpec([[ProcessingTimeAdvance(100)], []], Nothing, parallelism=2, checkpoint_interval=10**9,
                   config=TaskConfig(unaligned_checkpoints=True), processing_time="input",
                   ended_sources_finished_on_restore=True)
    job = GraphJob(graph_spec_of(spec))
    first, second = sorted(job.tasks, key=lambda t: t.vertex_subtask)
    job.sources[1].emit_next()              # MAX_WATERMARK, EndOfData on channel 1
    job.coordinator.trigger(1)              # checkpoint 1: a barrier on channel 0 only
    job.sources[0].emit_next()              # the advance, after the barrier
    job.sources[0].emit_next()              # MAX_WATERMARK, EndOfData on channel 0
    _run_until_idle(first)                  # snapshot at the barrier (clock 0), the advance, the end
    assert first.state == first.FINISHED
    assert first.processing_time_service.get_current_processing_time() == 100
    _run_until_idle(second, stop=lambda: job.coordinator.completed_count == 1)  # acknowledges, not finished
    assert job.coordinator.completed_count == 1 and second.state == second.RUNNING
    _run_until_idle(first)                  # checkpoint 1's notification: not the final checkpoint
    still_finished = first.state == first.FINISHED
    job.coordinator.trigger(2)              # every source ended: checkpoint 2 has them at their end
    _run_until_idle(first)
    _run_until_idle(second)
    assert job.coordinator.completed_count == 2
    _run_until_idle(first)                  # checkpoint 2's notification: the final checkpoint
    snapshot = next(s for s in job.coordinator.latest().task_snapshots if s.vertex_subtask == 0)
    ended = first.state

    job.failover(0, "fail")                 # restores checkpoint 2: the sources end at once
    restored = next(t for t in job.tasks if t.vertex_subtask == 0)
    # the advance read after checkpoint 1's barrier is in the restored clock and lineage (the
    # sources do not send it again)
    assert restored.processing_time_service.get_current_processing_time() == 100
    assert list(restored.inherited).count(0) == 3  # the advance, MAX_WATERMARK and EndOfData of channel 0
    assert snapshot.processing_time == 100 and snapshot.channel_state == []
    assert still_finished and ended == first.TERMINATED
