"""Operator certification and a restart's own effects (docs/certify.md, "Findings, not faults"):
processing time that passes while the job restarts, and Types.FLOAT() state that PyFlink's state
cache hands back as written until a restore reads it back in single precision. Each is a finding
only when the same scenario without it holds; hand-built scenarios of real operators show both."""

from __future__ import annotations

import sys
from pathlib import Path

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction
from streamproof.flink.datastream.state import ValueStateDescriptor
from streamproof.properties import certify as cert
from streamproof.properties import certify_checks as cc
from streamproof.properties.job.steps import Fail, ProcessingTime, UserRecord
from streamproof.properties.job.values import encode
from streamproof.properties.reach import counting
from streamproof.properties.scenario import JSON, Scenario

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from examples.operators.real import fraud_detector as fd  # noqa: E402


def scenario(subject, steps, gap: int = 0) -> Scenario:
    params = {"operator": subject.name, "sources": 1, "parallelism": 1, "max_parallelism": 8,
              "checkpoint_interval": 3, "interruptible_timers": True, "unaligned": False, "channel_capacity": 4,
              "async_mail_rate": 0.0, "seed": 0, "late_records": True, "processing_time": "input",
              "restart_gap": gap}
    return Scenario(family="job", steps=tuple(steps), params=params)


def record(key, value, ts) -> UserRecord:
    return UserRecord(0, JSON.freeze(encode(key)), JSON.freeze(encode(value)), ts)


def verdict(s: Scenario):
    """(the same-output problem before findings are considered, after, the findings noted)."""
    with counting() as seen:
        after = cc._same_output(s, cc.Runs(s))
    return cc._same_output_as_run(s, cc.Runs(s)), after, set(seen)


def transaction(account, n, amount):
    r = fd.Row(accountId=account, timestamp=n * fd.SIX_MINUTES, amount=amount)
    return record(fd.key(r), r, fd.timestamp(r))


def test_a_restart_that_takes_a_minute_loses_the_fraud_walkthroughs_alert_a_finding():
    """FraudDetector: a small transaction sets the flag and a one-minute processing-time timer; a
    checkpoint; a failure; the large transaction after the restore. Restarting with a minute of
    processing time passing, the restored timer is due at once and clears the flag: no alert, where
    the failure-free run (and the instant restart) alerts. A failure-free run of the input paused a
    minute commits the same: the finding, not a refusal."""
    subject = cert.load("examples.operators.real.fraud_detector:FraudDetector")
    steps = [transaction(1, 0, 0.5), ProcessingTime(0, 1000), *[transaction(2, i, 100.0) for i in range(1, 8)],
             Fail(at=12, checkpoints=1), transaction(1, 9, 900.0)]
    before, after, seen = verdict(scenario(subject, steps, gap=60_000))
    assert before is not None and "missing [Alert{id=1}]" in before[1]
    assert after is None and cc.FINDING_RESTART_TIME in seen
    before, after, seen = verdict(scenario(subject, steps, gap=0))
    assert before is None and after is None and cc.FINDING_RESTART_TIME not in seen


class FloatSum(KeyedProcessFunction):
    """state_access.py's shape: a running sum per key in Types.FLOAT() state, emitted per record."""

    def open(self, runtime_context):
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.FLOAT()))

    def process_element(self, value, ctx):
        current = (self.sum.value() or 0.0) + value[1]
        self.sum.update(current)
        yield value[0], current


class DoubleSum(FloatSum):
    def open(self, runtime_context):
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.DOUBLE()))


def records():
    from hypothesis import strategies as st
    return st.tuples(st.sampled_from("ab"), st.floats(0, 1))


def key(value):
    return value[0]


def timestamp(value):
    return 0


def test_float_state_read_back_after_a_restore_is_a_finding_and_double_state_is_not():
    """After the restore the FLOAT sum continues from Java's float of 0.8 (the checkpointed value),
    the failure-free run from the double: later sums differ in their last digits, as on Flink
    (state_access.py). With FLOAT state single precision from the write on they do not: the
    finding. A Types.DOUBLE() sum keeps them equal."""
    steps = [record("a", ("a", 0.1), i) for i in range(8)] + [Fail(at=12, checkpoints=1)] + \
        [record("a", ("a", 0.1), i) for i in range(8, 12)]
    spec = dict(records=f"{__name__}:records", key=f"{__name__}:key", timestamp=f"{__name__}:timestamp")
    before, after, seen = verdict(scenario(cert.load(f"{__name__}:FloatSum", **spec), steps))
    assert before is not None and after is None and cc.FINDING_FLOAT_STATE in seen
    before, after, seen = verdict(scenario(cert.load(f"{__name__}:DoubleSum", **spec), steps))
    assert before is None and after is None and cc.FINDING_FLOAT_STATE not in seen
