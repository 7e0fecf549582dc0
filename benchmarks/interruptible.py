"""How long a checkpoint barrier waits behind a watermark that fires many timers (FLIP-443).

N timers are due at one watermark; the barrier is right behind the watermark in the input
channel, and the checkpoint's announcement arrives as mail while the timers fire (as Flink's
priority events do). Without interruptible timers the barrier waits for every timer; with them
it waits for about one. Also measures the job simulator's throughput.

    python -m benchmarks.interruptible [--timers 100000] [--records 20000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamproof.impl.operators import keyed_process_operator as operators_module
from streamproof.impl.graph.job import JobSpec
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord
from streamproof.impl.graph.sim import simulate
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem
from streamproof.impl.tasks.stream_task import CheckpointBarrier, OperatorTask, TaskConfig, Watermark
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService


class CountFirings(KeyedProcessFunction):
    """Emits each firing; the first firing lets the checkpoint barrier arrive (``arrive``)."""

    interruptible_timers = True

    def __init__(self):
        self.arrive = None

    def on_timer(self, timestamp, ctx, out):
        if self.arrive is not None:
            self.arrive, arrive = None, self.arrive
            arrive()
        out.collect(timestamp)


def barrier_wait(timers: int, interruptible: bool) -> dict:
    """Wall time from the watermark until the checkpoint's synchronous part is done (the async
    part, serializing the copy-on-write timer snapshot, does not hold the task in Flink)."""
    acked = {}
    synced = {}
    snapshot_at_once = operators_module.snapshot_at_once

    def timed_snapshot_at_once(manager, *args, **kwargs):
        snapshot = snapshot_at_once(manager, *args, **kwargs)
        synced.setdefault("at", time.perf_counter())
        return snapshot

    operators_module.snapshot_at_once = timed_snapshot_at_once
    function = CountFirings()
    task = OperatorTask("bench", 0, 1, 0, 128, KeyGroupRange(0, 127), function, 1,
                        ManualProcessingTimeService(), ExternalSystem(),
                        TaskConfig(interruptible_timers=interruptible, unaligned_checkpoints=True),
                        lambda c, snapshot: acked.setdefault("at", (time.perf_counter(), task.operator.timers_fired, steps)))
    task.open()
    service = task.operator.user_timer_service
    for i in range(timers):
        task.operator.key_context.set_current_key(f"key-{i}")
        service.register_event_time_timer(10)
    # the unaligned barrier arrives while the first timer fires (it overtakes as mail)
    function.arrive = lambda: task.receive(0, CheckpointBarrier(1))
    task.receive(0, Watermark(10))
    steps = 0
    started = time.perf_counter()
    while "at" not in acked:
        steps += 1
        task.run_step()
    acked_at, fired, steps_at = acked["at"]
    acked_at = synced["at"]
    operators_module.snapshot_at_once = snapshot_at_once
    while task.is_runnable():
        task.run_step()
    return {"mode": "interruptible" if interruptible else "not interruptible", "timers": timers,
            "fired_before_barrier": fired, "mailbox_steps": steps_at + 1,
            "barrier_wait_ms": (acked_at - started) * 1000, "all_fired": task.operator.timers_fired}


def simulator_throughput(records: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    sources = []
    for s in range(2):
        ts, elements = 0, []
        for i in range(records // 2):
            ts += rng.randint(0, 2)
            elements.append(StreamRecord(f"k{rng.randint(0, 99)}", 1, ts))
            if i % 50 == 49:
                elements.append(Watermark(ts - 1))
        sources.append(elements)
    from streamproof.properties.job.functions import WindowSum
    spec = JobSpec(sources, lambda: WindowSum(100), parallelism=2, checkpoint_interval=500,
                   config=TaskConfig(interruptible_timers=True), channel_capacity=16)
    started = time.perf_counter()
    result = simulate(spec, seed, max_steps=50 * records)
    seconds = time.perf_counter() - started
    return {"records": records, "steps": result.steps, "seconds": seconds, "records_per_s": records / seconds,
            "committed": len(result.committed), "checkpoints": result.checkpoints}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timers", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [barrier_wait(args.timers, False), barrier_wait(args.timers, True)]
    throughput = simulator_throughput(args.records)
    if args.json:
        print(json.dumps({"barrier": rows, "simulator": throughput}))
        return 0
    base = rows[0]
    print(f"{'mode':>18} {'timers':>8} {'fired before barrier':>21} {'mailbox steps':>14} {'wait ms':>9} {'wait ratio':>11}")
    for row in rows:
        print(f"{row['mode']:>18} {row['timers']:>8} {row['fired_before_barrier']:>21} {row['mailbox_steps']:>14} "
              f"{row['barrier_wait_ms']:>9.1f} {row['barrier_wait_ms'] / base['barrier_wait_ms']:>10.4f}x")
    ratio = base["barrier_wait_ms"] / rows[1]["barrier_wait_ms"]
    print(f"\nthe barrier waits {ratio:,.0f}x less with interruptible timers "
          f"({rows[1]['fired_before_barrier']} timer(s) instead of {base['fired_before_barrier']})")
    print(f"simulator: {throughput['records']} records in {throughput['seconds']:.2f} s = "
          f"{throughput['records_per_s']:,.0f} records/s ({throughput['steps']} steps, "
          f"{throughput['checkpoints']} checkpoints, {throughput['committed']} windows committed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
