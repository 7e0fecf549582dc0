"""Ports of Flink's coordinator ITCases onto impl/coordination/valve_pipeline.py, for each protocol.

* CoordinatorEventsExactlyOnceITCase: two coordinators (200 and 10 events) whose recipients are
  source tasks, a global failure of the job each at a random point: every recipient ends with
  exactly [0..N-1]. The legacy valve passes it too: a source's barrier travels by RPC, behind
  the events, which is why this test did not see FLINK-26029.
* CoordinatorEventsToStreamOperatorRecipientExactlyOnceITCase (source -> network -> operator):
  testCheckpoint (every completed checkpoint consistent, exactly [0..N-1]) and
  testCheckpointWithSubtaskFailure (region failover of the recipient; the coordinator is not
  reset but told subtask_reset; the recipient restarts from its last checkpoint): flink-2.3 and
  streamproof pass, legacy applies events twice.
"""

import random
from collections import Counter

import pytest

from streamproof.impl.coordination import PROTOCOLS
from streamproof.impl.coordination.valve_pipeline import PipelineConfig, ValvePipeline

SEEDS = range(12)


def _exactly(out, events):
    return all(out[op][i] == list(range(n)) for op, n in enumerate(events) for i in range(len(out[op])))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_coordinator_events_exactly_once_itcase(protocol):
    for seed in SEEDS:
        r = random.Random(seed)
        config = PipelineConfig(protocol=protocol, recipient="source", events=(200, 10),
                                global_failure_at=(r.randint(1, 199), r.randint(1, 9)), seed=seed)
        pipeline = ValvePipeline(config)
        out = pipeline.run()
        assert _exactly(out, config.events), (seed, out)
        assert sum(1 for entry in pipeline.log if entry[0] == "global failover") == 2
        assert not pipeline.inconsistent


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_operator_recipient_checkpoint(protocol):
    """testCheckpoint: no failure; every completed checkpoint holds, per subtask, exactly the
    events the coordinator had sent when it completed its part."""
    inconsistent = 0
    for seed in SEEDS:
        pipeline = ValvePipeline(PipelineConfig(protocol=protocol, events=(60,), parallelism=2, seed=seed))
        out = pipeline.run()
        assert _exactly(out, (60,)), (seed, out)
        assert any(entry[0] == "completed" for entry in pipeline.log)
        inconsistent += bool(pipeline.inconsistent)
    if protocol == "legacy":
        assert inconsistent > 0  # the barrier comes through the network, the events by RPC: FLINK-26029
    else:
        assert inconsistent == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_operator_recipient_checkpoint_with_subtask_failure(protocol):
    duplicates = 0
    for seed in SEEDS:
        r = random.Random(seed)
        config = PipelineConfig(protocol=protocol, events=(60,), subtask_failure_at=r.randint(1, 59), seed=seed)
        pipeline = ValvePipeline(config)
        out = pipeline.run()
        assert any(entry[0] == "region failover" for entry in pipeline.log)
        received = out[0][0]
        if protocol == "legacy":
            assert not [v for v in range(60) if v not in received], (seed, received)  # never lost...
            duplicates += any(c > 1 for c in Counter(received).values())          # ...but duplicated
        else:
            assert received == list(range(60)), (seed, received, pipeline.log)
    if protocol == "legacy":
        assert duplicates > 0
