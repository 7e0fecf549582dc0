"""What certifying a whole job costs: a job of two keyed operators in sequence, and a two-input job
(the same records over two connected sources into one keyed operator), against the job of its
first operator alone, on the same records, measured in one run and printed as ratios, with
scenarios per second; and, for scale, the single-operator certification (``module:Class`` with the
same records as its ``stream()``) at the same number of examples.

    python -m benchmarks.certify_job_speed                 # the plan plus 50 random scenarios
    python -m benchmarks.certify_job_speed --examples 0    # the plan only
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks.common import format_table

RECORDS = [(t * 7 % 97 + t * 10, "k%d" % (t % 5), t % 3 + 1) for t in range(40)]

OPERATOR = '''
from hypothesis import strategies as st
from pyflink.common import Duration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedCoProcessFunction
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

RECORDS = {records!r}


class SumAtRegistration(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))
        self.at = runtime_context.get_map_state(MapStateDescriptor("at", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        self.sum.update((self.sum.value() or 0) + value[2])
        self.at.put(ctx.timestamp() + 50, self.sum.value())
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 50)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.at.get(timestamp)
        self.at.remove(timestamp)


class CoSumAtRegistration(KeyedCoProcessFunction):
    """SumAtRegistration on keyed connected streams: both inputs add to one sum."""

    open = SumAtRegistration.open

    def process_element1(self, value, ctx):
        return SumAtRegistration.process_element(self, value, ctx)

    process_element2 = process_element1
    on_timer = SumAtRegistration.on_timer


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


def stream():
    return st.just(RECORDS)


def key(record):
    return record[1]


def timestamp(record):
    return record[0]


def main(two):
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(20)).with_timestamp_assigner(First())
    if two == "inputs":  # the same records over two sources, connected into one keyed operator
        first = env.from_collection(RECORDS[0::2]).assign_timestamps_and_watermarks(strategy)
        second = env.from_collection(RECORDS[1::2]).assign_timestamps_and_watermarks(strategy)
        first.key_by(lambda v: v[1]).connect(second.key_by(lambda v: v[1])).process(CoSumAtRegistration()).print()
        env.execute()
        return
    sums = env.from_collection(RECORDS) \\
        .assign_timestamps_and_watermarks(strategy) \\
        .key_by(lambda v: v[1]) \\
        .process(SumAtRegistration())
    if two:
        sums = sums.key_by(lambda v: v[0]).reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
    sums.print()
    env.execute()
'''


def _write(folder: Path) -> dict[str, Path]:
    (folder / "bench_ops.py").write_text(OPERATOR.format(records=RECORDS))
    one, two = folder / "one_operator_job.py", folder / "two_operator_job.py"
    inputs = folder / "two_input_job.py"
    one.write_text("from bench_ops import main\nif __name__ == '__main__':\n    main(False)\n")
    two.write_text("from bench_ops import main\nif __name__ == '__main__':\n    main(True)\n")
    inputs.write_text("from bench_ops import main\nif __name__ == '__main__':\n    main('inputs')\n")
    return {"one": one, "two": two, "inputs": inputs}


def _job(path: Path, examples: int, seed: int) -> dict:
    from streamproof.properties import certify_job as cj

    started = time.perf_counter()
    certificate = cj.certify_job(cj.load_job(str(path)), examples, seed)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "scenarios": certificate.scenarios, "status": certificate.status}


def _operator(folder: Path, examples: int, seed: int) -> dict:
    import os
    from streamproof.properties import certify as cert
    from streamproof.properties.explore import explore

    os.chdir(folder)
    sys.path.insert(0, str(folder))
    subject = cert.load("bench_ops:SumAtRegistration")
    started, count = time.perf_counter(), 0
    for prop in cert.properties_for(subject):
        count += explore(prop, examples, seed=seed, shrink=False).examples
    return {"seconds": time.perf_counter() - started, "scenarios": count, "status": "-"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        jobs = _write(folder)
        sys.path.insert(0, str(folder))
        one = _job(jobs["one"], args.examples, args.seed)
        two = _job(jobs["two"], args.examples, args.seed)
        inputs = _job(jobs["inputs"], args.examples, args.seed)
        operator = _operator(folder, max(args.examples, 1), args.seed)
    rows = [("one-operator job (the baseline)", one), ("two-operator job", two),
            ("two-input job (the records over two connected sources)", inputs),
            ("the operator alone (module:Class, --stream of the same records)", operator)]
    if args.json:
        print(json.dumps({name: r for name, r in rows}))
        return 0
    from types import SimpleNamespace

    table = [SimpleNamespace(name=name, seconds=r["seconds"], scenarios=r["scenarios"],
                             rate=r["scenarios"] / r["seconds"], ratio=r["seconds"] / one["seconds"],
                             rate_ratio=(r["scenarios"] / r["seconds"]) / (one["scenarios"] / one["seconds"]),
                             status=r["status"])
             for name, r in rows]
    print(format_table(table, [("certification", "name", "{}"), ("seconds", "seconds", "{:.1f}"),
                               ("scenarios", "scenarios", "{}"), ("scenarios/s", "rate", "{:.1f}"),
                               ("time vs one-operator job", "ratio", "{:.2f}x"),
                               ("scenarios/s vs one-operator job", "rate_ratio", "{:.2f}x"), ("status", "status", "{}")]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
