"""``streamproof certify JOB.py``: a PyFlink job certified as written (docs/certify.md, "Certifying
a job"). Each job property bites on a job built to break it (tests/jobs/), a safe variant holds,
bad input is one line and exit 2, and the verdict does not depend on whether genuine pyflink is
importable."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streamproof.properties import certify_job as cj

JOBS = Path(__file__).parent / "jobs"
EXAMPLES = 5


@pytest.fixture(scope="module")
def certified():
    cache: dict = {}

    def run(name: str):
        if name not in cache:
            subject = cj.load_job(str(JOBS / name))
            cache[name] = (subject, cj.certify_job(subject, EXAMPLES, 0))
        return cache[name]
    return run


def test_a_timer_that_emits_its_state_now_is_refused_for_split_firings(certified):
    _, cert = certified("timer_sum_unsafe.py")
    result = cert.results["job.interruptible-timers"]
    assert result["verdict"] == "failed"
    assert "splitting the timer firings of process changes the output" in result["message"]
    assert "('c', 12, 101)" in result["message"] and "('c', 12, 1)" in result["message"]
    assert cert.results["job.same-output"]["verdict"] == "held"


def test_the_same_timer_reading_the_sum_at_registration_is_certified(certified):
    _, cert = certified("timer_sum_safe.py")
    assert cert.status == "certified", cert.results
    assert cert.coverage["process"]["timer fired before end of input"] > 0
    assert cert.coverage["process"]["state restored after a checkpoint"] > 0


def test_a_wall_clock_stamp_on_window_results_is_a_finding_not_a_split_refusal(certified):
    """A split firing ends later in processing time: a result stamped with datetime.now() differs
    from the unsplit run's. Before, job.interruptible-timers refused this safe job; with processing
    time standing still the split and unsplit runs agree, which is a finding."""
    _, cert = certified("window_stamped.py")
    assert cert.status == "certified", cert.results
    assert "output depends on the processing time timers fire at" in {f["finding"] for f in cert.findings}


def test_a_map_stamping_the_clock_and_a_uuid_is_certified(certified):
    """A non-keyed map reads the processing time as its clock and draws ids pinned to the record,
    as keyed callbacks do; a replay's other stamps are the wall-clock finding, not a refusal."""
    _, cert = certified("map_stamped.py")
    assert cert.status == "certified", cert.results
    assert "output depends on the wall-clock time callbacks read" in {f["finding"] for f in cert.findings}


def test_a_wall_clock_stamp_does_not_hide_an_unsafe_timer(certified):
    """The same relaxation on an unsafe timer (its sum "now"): still refused, for the sum."""
    _, cert = certified("timer_sum_stamped.py")
    result = cert.results["job.interruptible-timers"]
    assert result["verdict"] == "failed", cert.results
    assert "'c', 12, 101" in result["message"] and "'c', 12, 1," in result["message"]


def test_state_in_a_python_attribute_is_refused_with_its_cause(certified):
    _, cert = certified("attribute_counter.py")
    result = cert.results["job.same-output"]
    assert result["verdict"] == "failed"
    assert "no failure-free run's" in result["message"] and "cause: the failure at step" in result["message"]


def test_a_counterexample_replays_from_its_file(certified, tmp_path):
    subject, cert = certified("timer_sum_unsafe.py")
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(cert.counterexamples["job.interruptible-timers"].to_json()))
    outcomes = cj.replay_job(subject, str(path))
    assert outcomes["job.interruptible-timers"].message is not None
    assert outcomes["job.same-output"].message is None


def test_the_plan_gives_the_same_verdict_whatever_the_example_count(certified):
    subject, cert = certified("timer_sum_unsafe.py")
    again = cj.certify_job(subject, 0, 7)
    assert {p: r["verdict"] for p, r in again.results.items()} == {p: r["verdict"] for p, r in cert.results.items()}


def _cli(*args: str, cwd: Path, hide_pyflink: bool = False) -> subprocess.CompletedProcess:
    prelude = "import sys; " + ("sys.modules['pyflink'] = None; " if hide_pyflink else "")
    code = prelude + "from streamproof.cli import main; sys.argv = ['streamproof'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


OPERATOR_FOR_PYFLINK = """
from hypothesis import strategies as st
from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction
from pyflink.datastream.state import ValueStateDescriptor


class CountAtFiring(KeyedProcessFunction):
    def open(self, ctx):
        self.n = ctx.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        self.n.update((self.n.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)

    def on_timer(self, ts, ctx):
        yield ctx.get_current_key(), ts, self.n.value()


def records():
    return st.tuples(st.sampled_from("abc"), st.integers(0, 100))


def key(record):
    return record[0]


def timestamp(record):
    return record[1]
"""


@pytest.mark.parametrize("hide_pyflink", [False, True], ids=["pyflink-importable", "pyflink-hidden"])
def test_an_operator_written_for_pyflink_is_certified_with_or_without_genuine_pyflink(tmp_path, hide_pyflink):
    """Its imports untouched: genuine PyFlink's classes when installed, else streamproof's bound to
    the ``pyflink`` names. It reads its count at firing time: a split firing changes the output."""
    (tmp_path / "count_at_firing.py").write_text(OPERATOR_FOR_PYFLINK)
    result = _cli("certify", "count_at_firing:CountAtFiring", "--examples", "20", "--out", str(tmp_path / "c"),
                  cwd=tmp_path, hide_pyflink=hide_pyflink)
    assert result.returncode == 1, result.stdout + result.stderr
    verdicts = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines() if line.startswith("certify.")}
    assert verdicts == {"certify.same-output": "held", "certify.interruptible-timers": "failed",
                        "certify.watermarks": "held", "certify.end-of-input": "held"}, result.stdout


def test_an_operator_module_missing_another_module_is_one_line(tmp_path):
    (tmp_path / "needs_kafka.py").write_text("import kafka_client_nobody_installed\n")
    result = _cli("certify", "needs_kafka:Op", cwd=tmp_path, hide_pyflink=True)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "No module named 'kafka_client_nobody_installed'" in result.stderr


@pytest.mark.parametrize("hide_pyflink", [False, True], ids=["pyflink-importable", "pyflink-hidden"])
def test_the_cli_refuses_the_unsafe_job_with_or_without_genuine_pyflink(tmp_path, hide_pyflink):
    result = _cli("certify", str(JOBS / "timer_sum_unsafe.py"), "--examples", "2", "--out", str(tmp_path / "c"),
                  cwd=tmp_path, hide_pyflink=hide_pyflink)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "job.interruptible-timers" in result.stdout and "failed" in result.stdout
    assert "process (keyed_process, keyed) at timer_sum_unsafe.py:" in result.stdout
    document = json.loads((tmp_path / "c" / "certificate.json").read_text())
    assert document["status"] == "not certified"
    replay = _cli("certify", str(JOBS / "timer_sum_unsafe.py"), "--replay",
                  document["counterexample_files"]["job.interruptible-timers"], cwd=tmp_path)
    assert replay.returncode == 1 and "job.interruptible-timers: FAILED" in replay.stdout


BAD_JOBS = {
    "unsupported API": ("""
        from pyflink.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        a = env.from_collection([1, 2])
        a.shuffle().print()
        env.execute()
        """, "job.py:5: DataStream.shuffle is not supported"),
    "fails while built": ("""
        from pyflink.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        ds = env.from_collection([1, 2])
        ds.map(lambda x: x).print(undefined_name)
        env.execute()
        """, "job.py:5: the job failed while it was built: NameError"),
    "source without data": ("""
        from pyflink.common import WatermarkStrategy
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.connectors.kafka import KafkaSource
        env = StreamExecutionEnvironment.get_execution_environment()
        source = KafkaSource.builder().set_topics("t").build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").print()
        env.execute()
        """, "has no data in the job's file: give --records"),
    "key selector raises": ("""
        from pyflink.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([(1, 'a'), (2, 'b')]) \\
            .key_by(lambda v: v[5]) \\
            .reduce(lambda a, b: a) \\
            .print()
        env.execute()
        """, "the key selector of reduce raised IndexError"),
    "no execute": ("""
        from pyflink.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        """, "never called env.execute()"),
}


@pytest.mark.parametrize("case", sorted(BAD_JOBS))
def test_bad_jobs_are_one_line_and_exit_2(tmp_path, case):
    source, expected = BAD_JOBS[case]
    (tmp_path / "job.py").write_text(textwrap.dedent(source))
    result = _cli("certify", "job.py", "--out", str(tmp_path / "c"), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_options_of_one_operator_are_refused_for_a_job(tmp_path):
    result = _cli("certify", str(JOBS / "timer_sum_safe.py"), "--key", "0", cwd=tmp_path)
    assert result.returncode == 2 and "--key is for one operator" in result.stderr


def test_a_job_function_is_captured_without_being_called_for_real(tmp_path):
    from streamproof.flink.capture import capture_callable

    (tmp_path / "jobmod.py").write_text(textwrap.dedent("""
        from pyflink.datastream import StreamExecutionEnvironment
        CALLS = []
        def main():
            CALLS.append(1)
            env = StreamExecutionEnvironment.get_execution_environment()
            env.from_collection([1, 2]).map(lambda x: x + 1).print()
            env.execute()
        """))
    sys.path.insert(0, str(tmp_path))
    try:
        import jobmod
        pipeline = capture_callable(jobmod.main)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("jobmod", None)
    assert [n.kind for n in pipeline.nodes] == ["source", "map", "sink"]
    assert jobmod.CALLS == []  # the imported module's function was never called; a fresh copy was


def test_explain_draws_a_job_counterexample_with_the_jobs_operators_as_lanes(tmp_path):
    certify = _cli("certify", str(JOBS / "timer_sum_unsafe.py"), "--examples", "0", "--out", str(tmp_path / "c"),
                   cwd=tmp_path)
    assert certify.returncode == 1, certify.stderr
    result = _cli("explain", str(tmp_path / "c" / "job.interruptible-timers.json"), "--width", "140", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    out = result.stdout
    header = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    assert "process[0]" in header and "Sink: print[0]" in header and "/tag" not in header
    lines = out.splitlines()
    marked = next(i for i, line in enumerate(lines) if line.startswith(">>"))
    assert "fire(event) ('c', 12, 101)" in lines[marked]
    before = "\n".join(lines[:marked])
    assert "fire(event) ('b', 11, 1)" in before and "in 'c': (31, 'c', 100)" in before  # the record between parts
    assert "timer firings split at every chance" in out and "the watermark generator emits" in out


def test_explain_draws_the_restore_of_a_same_output_counterexample(tmp_path):
    _cli("certify", str(JOBS / "attribute_counter.py"), "--examples", "0", "--out", str(tmp_path / "c"), cwd=tmp_path)
    out = _cli("explain", str(tmp_path / "c" / "job.same-output.json"), cwd=tmp_path).stdout
    assert "FAILOVER" in out and "fault: failure at step" in out
    marked = next(line for line in out.splitlines() if line.startswith(">>"))
    assert "out ('a', 1)" in marked


def test_the_fixture_certifies_a_job_file_and_a_build_function(streamproof_certify, streamproof_out, tmp_path):
    certificate = streamproof_certify(str(JOBS / "timer_sum_safe.py"), examples=0)
    assert certificate.holds and certificate.status == "certified"
    (tmp_path / "myjob.py").write_text(textwrap.dedent("""
        from pyflink.datastream import StreamExecutionEnvironment
        def build():
            env = StreamExecutionEnvironment.get_execution_environment()
            env.from_collection(['a', 'b', 'a']).key_by(lambda w: w).map(lambda w: (w, 1)).print()
            env.execute()
        """))
    sys.path.insert(0, str(tmp_path))
    try:
        import myjob
        certificate = streamproof_certify(myjob.build, examples=0)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("myjob", None)
    assert certificate.holds, certificate.results
    # the test's own folder: the first certificate, the second in 2/
    assert (streamproof_out / "certificate.json").exists() and (streamproof_out / "2" / "certificate.json").exists()


def test_the_public_api_certifies_a_job():
    import streamproof

    certificate = streamproof.certify_job(str(JOBS / "attribute_counter.py"), examples=0)
    assert isinstance(certificate, streamproof.JobCertificate) and not certificate.holds
    with pytest.raises(streamproof.JobCertifyError):
        streamproof.certify_job(str(JOBS / "no_such_job.py"))


@pytest.mark.parametrize("bug, prop, job", [
    ("watermark-emitted-when-interrupted", "job.watermarks", "timer_sum_safe.py"),
    ("interrupt-checked-before-first-timer", "job.end-of-input", "timer_sum_safe.py"),
    ("sink-commits-on-snapshot", "job.same-output", "window_sum.py"),
])
def test_each_job_property_bites_on_a_runtime_bug(bug, prop, job):
    """A correct job on a runtime with a bug-zoo patch is not certified, by the property that
    watches that part of the runtime."""
    from streamproof.properties.bugzoo import get_variant

    subject = cj.load_job(str(JOBS / job))
    assert cj.certify_job(subject, 0, 0).holds
    with get_variant(bug).patch():
        certificate = cj.certify_job(subject, 0, 0, until_failed=prop)
    assert certificate.results[prop]["verdict"] == "failed", certificate.results


def test_a_connector_source_reads_the_records_given_for_it(tmp_path):
    (tmp_path / "kafka_job.py").write_text(textwrap.dedent("""
        from pyflink.common import WatermarkStrategy
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.connectors.kafka import KafkaSource
        env = StreamExecutionEnvironment.get_execution_environment()
        source = KafkaSource.builder().set_topics("words").build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka") \\
            .key_by(lambda w: w).map(lambda w: (w, 1)).print()
        env.execute()
        """))
    (tmp_path / "data.py").write_text("WORDS = ['a', 'b', 'a', 'c']\n")
    result = _cli("certify", "kafka_job.py", "--records", "kafka=data:WORDS", "--examples", "0", "--out", "c",
                  cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "certified" in result.stdout
    wrong = _cli("certify", "kafka_job.py", "--records", "kafk=data:WORDS", cwd=tmp_path)
    assert wrong.returncode == 2 and "the job has no source named 'kafk'" in wrong.stderr


@pytest.mark.parametrize("job, finding", [("rebalance_order.py", None),
                                          ("union_order.py", "output depends on arrival order across channels")])
def test_an_order_the_job_leaves_to_flink_is_no_refusal(job, finding):
    """A reduce whose result depends on the order records arrive in over several channels: a
    restore that deals them in another order is a failure-free order too (found by a stress test:
    both were refused before records were replayed in their lineage's order and rebalancing
    resumed where the checkpoint left it)."""
    certificate = cj.certify_job(cj.load_job(str(JOBS / job)), 30, 3)
    assert certificate.holds, certificate.results
    assert [f["finding"] for f in certificate.findings] == ([finding] if finding else [])


def test_the_job_certificate_page_renders_its_markdown(certified, tmp_path):
    from streamproof.properties import certify_job_report

    from tests.pages import highlighted, raw_markdown

    subject, cert = certified("timer_sum_unsafe.py")
    md = certify_job_report.write(subject, cert, tmp_path / "unsafe", "streamproof certify job.py", EXAMPLES, 0)
    page = (tmp_path / "unsafe" / "certificate.html").read_text()
    assert "| `job.interruptible-timers` | failed |" in md.read_text()  # the Markdown as it was
    assert raw_markdown(page) == [] and highlighted(page)
    assert '<p class="banner fail">not certified</p>' in page and "<h2>Verdicts</h2>" in page
    assert '<tr class="fail">\n<td><code>job.interruptible-timers</code></td>\n<td>failed</td>' in page
    assert "<td>unsafe</td>" in page and "<ol>" in page  # the operators table, the pipeline
    subject, cert = certified("timer_sum_safe.py")
    certify_job_report.write(subject, cert, tmp_path / "safe", "", EXAMPLES, 0)
    page = (tmp_path / "safe" / "certificate.html").read_text()
    assert raw_markdown(page) == [] and not highlighted(page) and '<p class="banner ok">certified</p>' in page


def test_processing_time_goes_on_while_a_job_restarts(monkeypatch):
    """A restart takes wall-clock time: state with a processing-time TTL shorter than the restart
    has expired when the job resumes (Apache Flink, examples/jobs/real/flink_expected.json:
    state_access.py). certify restarts jobs that use processing time with RESTART_GAP of it
    passing; the restored sums that start again from 0 differ from the instant restart's, and the
    same restart taking no time gives a failure-free output: a finding (the output depends on how
    long a restart takes), not a refusal, as for arrival order (docs/decisions.md)."""
    from streamproof.properties.certify_job import RESTART_GAP, plan
    from streamproof.flink.common.typeinfo import floats_rounded_on_write
    from streamproof.properties.certify_job_checks import FINDING_FLOAT_STATE, FINDING_RESTART_TIME, same_output
    from streamproof.properties.certify_job_runs import JobScenario, load_job

    subject = load_job(str(Path(__file__).resolve().parents[1] / "examples" / "jobs" / "real" / "state_access.py"))
    gaps = [s for what, s in plan(subject, 0, 0) if s.restart_gap]
    assert gaps and all(s.restart_gap == RESTART_GAP and s.faults for s in gaps)
    assert JobScenario.from_json(gaps[0].to_json()) == gaps[0]
    outcomes = [same_output(subject, s) for s in gaps]
    differ = [o for o in outcomes if o.message]
    assert differ and all(o.finding == FINDING_RESTART_TIME and "restart takes 60000 ms" in o.message for o in differ)
    # an instant restart: the sums survive it, read back in single precision (Types.FLOAT() state)
    instant = [same_output(subject, dataclasses.replace(s, restart_gap=0)) for s in gaps]
    assert all(o.message is None or o.finding == FINDING_FLOAT_STATE for o in instant)
    certificate = cj.certify_job(subject, 0, 0)
    assert certificate.results["job.same-output"]["verdict"] == "held"
    assert sorted(f["finding"] for f in certificate.findings) == sorted([FINDING_RESTART_TIME, FINDING_FLOAT_STATE])
    monkeypatch.setattr(cj, "RESTART_GAP", 0)  # a restart that takes no time
    certificate = cj.certify_job(subject, 0, 0)
    assert certificate.results["job.same-output"]["verdict"] == "held"
    assert [f["finding"] for f in certificate.findings] == [FINDING_FLOAT_STATE]
    with floats_rounded_on_write():  # without PyFlink's state cache: nothing depends on anything
        assert not cj.certify_job(subject, 0, 0).findings
