"""The pytest plugin's conventions, in inner pytest sessions of a scratch project (pytester; the
plugin loads through its entry point): Hypothesis profiles, where examples and seed come from,
``--streamproof-out``, failures as one paragraph, bad input as one line, the example database,
and operators, strategies and functions given as objects (docs/user-guide.md, docs/decisions.md
"pytest conventions")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.timeout(300)

# the scratch project's operators: a correct one (keyed state) and one counting in a Python
# attribute (not checkpointed: certify.same-output refuses it), impl.operators style
OPERATORS = textwrap.dedent('''
    import pytest
    import streamproof
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, MapStateDescriptor


    class WindowSum(KeyedProcessFunction):
        def open(self, ctx):
            self.sums = ctx.get_map_state(MapStateDescriptor("sums"))

        def process_element(self, value, ctx, out):
            end = (ctx.timestamp() // 10 + 1) * 10 - 1
            self.sums.put(end, self.sums.get(end, 0) + value)
            ctx.timer_service().register_event_time_timer(end)

        def on_timer(self, timestamp, ctx, out):
            out.collect((ctx.get_current_key(), timestamp, self.sums.get(timestamp, 0)))
            self.sums.remove(timestamp)


    class AttributeCounter(WindowSum):
        def open(self, ctx):
            super().open(ctx)
            self.seen = 0

        def on_timer(self, timestamp, ctx, out):
            self.seen += 1
            out.collect((ctx.get_current_key(), timestamp, self.sums.get(timestamp, 0), self.seen))
            self.sums.remove(timestamp)
''')

# a property that is cheap to explore and fails on some examples only (n >= 60 of 0..100)
RARE_FAILURE = textwrap.dedent('''
    from hypothesis import strategies as st
    from streamproof.properties.registry import Property, register
    from streamproof.properties.scenario import Scenario
    from streamproof.properties.verdict import Verdict


    def _check(scenario):
        n = scenario.params["n"]
        return Verdict("demo.small-n", n < 60, invariant="n-below-60", message=f"n is {n}")


    register(Property("demo.small-n", "timers", "n below 60", _check,
                      strategy=lambda: st.integers(0, 100).map(
                          lambda n: Scenario(family="timers", steps=(), params={"n": n}))))
''')


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A scratch project; its inner sessions see no CI (Hypothesis would load its `ci` profile,
    which has no example database) and none of this session's pytest options."""
    from hypothesis import _settings

    for name in list(getattr(_settings, "_CI_VARS", {"CI": None})) + ["PYTEST_ADDOPTS", "HYPOTHESIS_PROFILE"]:
        monkeypatch.delenv(name, raising=False)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "-s", *args, timeout=240)


def text(result: pytest.RunResult) -> str:
    return "\n".join(result.outlines + result.errlines)


def test_hypothesis_profile_dev_works_in_a_users_project_and_sets_the_examples(project):
    project.makepyfile(test_profile='''
        import pytest
        from hypothesis import settings

        @pytest.mark.streamproof(property="timers.differential")
        def test_check(streamproof_check):
            assert settings().max_examples == 50 and settings().database is None
            assert streamproof_check().examples == 50
    ''')
    result = run(project, "--hypothesis-profile=dev")
    assert result.ret == 0, text(result)
    result.assert_outcomes(passed=1)
    # a profile of the same name the project registered itself is kept
    project.makeconftest('''
        from hypothesis import settings
        settings.register_profile("dev", max_examples=7)
    ''')
    project.makepyfile(test_profile='''
        import pytest

        @pytest.mark.streamproof(property="timers.differential")
        def test_check(streamproof_check):
            assert streamproof_check().examples == 7
    ''')
    result = run(project, "--hypothesis-profile=dev")
    assert result.ret == 0, text(result)


def test_examples_and_seed_come_from_the_call_the_marker_the_hypothesis_options_in_that_order(project, tmp_path):
    project.makepyfile(test_ops=OPERATORS + textwrap.dedent('''
        def test_options(streamproof_certify):
            streamproof_certify(WindowSum)

        @pytest.mark.streamproof(examples=4, seed=9)
        def test_marker(streamproof_certify):
            streamproof_certify(WindowSum)

        @pytest.mark.streamproof(examples=4, seed=9)
        def test_call(streamproof_certify):
            streamproof_certify(WindowSum, examples=3, seed=11)

        @pytest.mark.streamproof(property="timers.differential", examples=6)
        def test_check(streamproof_check):
            assert streamproof_check().examples == 6
    '''))
    project.makeconftest('''
        from hypothesis import settings
        settings.register_profile("tiny", max_examples=5)
    ''')
    out = tmp_path / "out"
    result = run(project, "--hypothesis-seed=3", "--hypothesis-profile=tiny", f"--streamproof-out={out}")
    assert result.ret == 0, text(result)
    result.assert_outcomes(passed=4)

    def certificate(test: str) -> dict:
        return json.loads((out / f"test_ops.py__{test}" / "certificate.json").read_text())

    assert (certificate("test_options")["examples"], certificate("test_options")["seed"]) == (5, 3)
    assert (certificate("test_marker")["examples"], certificate("test_marker")["seed"]) == (4, 9)
    assert (certificate("test_call")["examples"], certificate("test_call")["seed"]) == (3, 11)
    # without a profile or a seed given: the built-in defaults (a marker's examples here: speed)
    project.makepyfile(test_ops=OPERATORS + textwrap.dedent('''
        @pytest.mark.streamproof(examples=20)
        def test_defaults(streamproof_certify):
            streamproof_certify(WindowSum)
    '''))
    result = run(project, f"--streamproof-out={out}")
    assert result.ret == 0, text(result)
    assert certificate("test_defaults")["seed"] == 0


def test_a_refused_certificate_is_one_paragraph_and_its_files_stay_in_streamproof_out(project, tmp_path):
    project.makepyfile(test_ops=OPERATORS + textwrap.dedent('''
        def test_refused(streamproof_certify):
            streamproof_certify(AttributeCounter, examples=25)

        def test_expected(streamproof_certify):
            certificate = streamproof_certify("test_ops:AttributeCounter", examples=25, expect_failure=True)
            assert certificate.status == "not certified"
            print("FAILED-PROPERTIES", [r["property"] for r in certificate.results if r["verdict"] == "failed"])

        def test_unexpectedly_certified(streamproof_certify):
            streamproof_certify(WindowSum, examples=3, expect_failure=True)
    '''))
    out = tmp_path / "kept"
    result = run(project, f"--streamproof-out={out}")
    output = text(result)
    result.assert_outcomes(passed=1, failed=2)
    assert "FAILED-PROPERTIES ['certify.same-output']" in output
    folder = out / "test_ops.py__test_refused"
    counterexample = folder / "certify.same-output.json"
    assert counterexample.is_file() and (folder / "certificate.md").is_file()
    assert (out / "test_ops.py__test_expected" / "certify.same-output.json").is_file()
    # the failure: a paragraph naming the subject, the property, its message, the file and the replay command
    failure = output[output.index("_ test_refused _"):output.index("_ test_unexpectedly_certified _")]
    assert "Traceback" not in failure and "def test_" not in failure and "streamproof_certify(" not in failure
    assert "test_ops:AttributeCounter is not certified (25 scenarios per property, seed 0" in failure
    assert "certify.same-output failed after" in failure
    assert f"counterexample: {counterexample}" in failure
    assert f"replay: streamproof certify test_ops:AttributeCounter --replay {counterexample}" in failure
    assert len(failure.strip().splitlines()) <= 8, failure
    assert "test_ops:WindowSum is certified, but expect_failure=True" in output
    # the counterexample replays from the command line
    replay = subprocess.run([sys.executable, "-m", "streamproof", "certify", "test_ops:AttributeCounter", "--replay",
                             str(counterexample)], cwd=project.path, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 1 and "certify.same-output: FAILED" in replay.stdout, replay.stdout + replay.stderr


def test_a_property_that_does_not_hold_is_one_paragraph_with_its_scenario(project, tmp_path):
    project.makepyfile(test_prop=RARE_FAILURE + textwrap.dedent('''
        import pytest

        @pytest.mark.streamproof(property="demo.small-n")
        def test_fails(streamproof_check):
            streamproof_check(examples=200)

        @pytest.mark.streamproof(property="demo.small-n")
        def test_expected(streamproof_check):
            exploration = streamproof_check(examples=200, expect_failure=True)
            assert exploration.invariant == "n-below-60"
    '''))
    out = tmp_path / "out"
    result = run(project, f"--streamproof-out={out}", "--hypothesis-profile=dev")
    result.assert_outcomes(passed=1, failed=1)
    output = text(result)
    scenario = out / "test_prop.py__test_fails" / "demo.small-n.json"
    assert json.loads(scenario.read_text())["params"] == {"n": 60}  # shrunk
    assert "streamproof: demo.small-n does not hold: n-below-60 after" in output and "n is 60" in output
    assert f"replay: streamproof replay {scenario}" in output
    assert "Traceback" not in output and "def test_fails" not in output


def test_the_example_database_replays_a_failure_first(project):
    """With the default Hypothesis profile (a database in .hypothesis/), a failure found once is
    the first example of the next exploration, whatever its seed; without a database it is not."""
    project.makepyfile(test_db=RARE_FAILURE + textwrap.dedent('''
        import os
        import pytest

        @pytest.mark.streamproof(property="demo.small-n")
        def test_db(streamproof_check):
            exploration = streamproof_check(examples=200, seed=int(os.environ["SEED"]), expect_failure=True)
            print("EXAMPLES", exploration.examples)
    '''))

    def examples(seed: int, *args: str) -> int:
        os.environ["SEED"] = str(seed)
        try:
            result = run(project, *args)
        finally:
            del os.environ["SEED"]
        assert result.ret == 0, text(result)
        return int(re.search(r"EXAMPLES (\d+)", text(result)).group(1))

    first = examples(1)
    assert first > 1 and (project.path / ".hypothesis").is_dir()
    assert examples(2) == 1 and examples(3) == 1  # replayed from the database
    assert examples(3, "--hypothesis-seed=5") == 1  # --hypothesis-seed does not turn it off
    assert examples(3, "--hypothesis-profile=dev") > 1  # dev: no database, the seed alone decides


def test_bad_input_is_one_line(project):
    project.makepyfile(test_bad='''
        import pytest
        import streamproof

        def test_no_module(streamproof_certify):
            streamproof_certify("no_such_module:X", examples=3)

        def test_unknown_property(streamproof_check):
            streamproof_check("no.such-property", examples=3)

        def test_raised_by_the_test():
            raise streamproof.CertifyError("'x:Y': raised by the test itself")

        def test_scenario_error(streamproof_replay):
            streamproof_replay(streamproof.load_scenario('{"family": "timers", "steps": [{"op": "nope"}]}'))
    ''')
    result = run(project)
    result.assert_outcomes(failed=4)
    output = text(result)
    assert "Traceback" not in output and "def test_" not in output and "raise streamproof" not in output, output
    lines = output.splitlines()

    def failure_of(test: str) -> list[str]:
        start = next(i for i, line in enumerate(lines) if f"_ {test} _" in line)
        end = next(i for i, line in enumerate(lines[start + 1:], start + 1) if line.startswith(("___", "===")))
        return [line for line in lines[start + 1:end] if line.strip()]

    assert failure_of("test_no_module") == ["CertifyError: 'no_such_module:X': cannot import no_such_module: "
                                            "ModuleNotFoundError: No module named 'no_such_module'"]
    [unknown] = failure_of("test_unknown_property")
    assert unknown.startswith("streamproof_check: unknown property 'no.such-property'; known: ")
    assert failure_of("test_raised_by_the_test") == ["CertifyError: 'x:Y': raised by the test itself"]
    [malformed] = failure_of("test_scenario_error")
    assert malformed.startswith("ScenarioError: ")


def test_objects_strategies_and_functions_are_accepted(project, tmp_path):
    project.makepyfile(test_objects=OPERATORS + textwrap.dedent('''
        from hypothesis import strategies as st
        from streamproof.flink.datastream import KeyedProcessFunction as PyFlinkFunction
        from streamproof.flink.datastream.state import ValueStateDescriptor
        from streamproof.flink.common import Types

        class IdleAlert(PyFlinkFunction):
            def open(self, runtime_context):
                self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

            def process_element(self, value, ctx):
                self.last.update(ctx.timestamp())
                ctx.timer_service().register_event_time_timer(ctx.timestamp() + 60)

            def on_timer(self, timestamp, ctx):
                yield ctx.get_current_key(), timestamp

        RECORDS = st.tuples(st.sampled_from(["u1", "u2", "u3"]), st.integers(0, 240))

        def test_class_instance_and_function(streamproof_certify):
            for target in (WindowSum, WindowSum(), lambda: WindowSum()):
                assert streamproof_certify(target, examples=20).holds

        def test_pyflink_instance_with_a_strategy_and_functions(streamproof_certify):
            certificate = streamproof_certify(IdleAlert(), examples=30, records=RECORDS, key=lambda r: r[0],
                                              timestamp=lambda r: r[1])
            assert certificate.operator == "test_objects:IdleAlert"
            assert certificate.input["records"].startswith("strategy tuples(")
            assert certificate.input["key"] == "test_objects:test_pyflink_instance_with_a_strategy_and_functions.<locals>.<lambda>"

        def test_a_local_class_is_not_replayable_from_the_command_line(streamproof_certify):
            class Local(AttributeCounter):
                pass

            certificate = streamproof_certify(Local(), examples=25, expect_failure=True)
            [failed] = [r for r in certificate.results if r["verdict"] == "failed"]
            assert failed["replay"].startswith("not replayable from the command line: "
                                               "test_objects:test_a_local_class_is_not_replayable_from_the_command_line"
                                               ".<locals>.Local is defined inside a function")
            print("COMMAND", certificate.command)
    '''))
    result = run(project, f"--streamproof-out={tmp_path / 'out'}")
    assert result.ret == 0, text(result)
    result.assert_outcomes(passed=3)
    assert "COMMAND streamproof.certify(test_objects:" in text(result)


def test_the_public_certify_dispatches_as_the_fixture_does(tmp_path):
    """`streamproof.certify` takes the CLI's options as arguments: a job file, a job's build
    function or one operator (a string, a class), each to its own kind of certificate."""
    from pathlib import Path

    import streamproof
    from streamproof.certify_api import is_job
    from tests import certify_operators

    jobs = Path(__file__).parent / "jobs"
    job = streamproof.certify(jobs / "timer_sum_safe.py", examples=0, out=tmp_path / "job")
    assert isinstance(job, streamproof.JobCertificate) and job.holds
    assert (tmp_path / "job" / "certificate.json").is_file()
    with pytest.raises(TypeError, match="key= is for one operator"):
        streamproof.certify(str(jobs / "timer_sum_safe.py"), key="0")
    operator = streamproof.certify(certify_operators.GoodSum, 15, seed=4, args="[]")
    assert isinstance(operator, streamproof.Certificate) and operator.seed == 4 and operator.holds
    assert operator.command == "streamproof certify tests.certify_operators:GoodSum --examples 15 --seed 4"
    with pytest.raises(streamproof.CertifyError, match="at least one example"):
        streamproof.certify("tests.certify_operators:GoodSum", examples=0)
    assert is_job(certify_operators.main) and not is_job(certify_operators.GoodSum)
    assert not is_job(lambda: certify_operators.GoodSum()) and not is_job(certify_operators.GoodSum())


def test_the_harness_fixture_and_a_harness_error_in_one_line(project):
    project.makepyfile(test_harness='''
        from streamproof.flink.datastream import KeyedProcessFunction


        class Echo(KeyedProcessFunction):
            closed = []

            def process_element(self, value, ctx):
                yield value

            def close(self):
                Echo.closed.append(True)


        def test_examples(streamproof_harness):
            h = streamproof_harness(Echo, key_selector=lambda v: v)
            h.process_element("a", 1).process_element("b", 2)
            h.assert_output(["a", "b"])

        def test_closed_after_the_test():
            assert Echo.closed == [True]

        def test_a_key_selector_that_raises(streamproof_harness):
            streamproof_harness(Echo, key_selector=lambda v: v["id"]).process_element("a")
    ''')
    result = run(project, "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)
    output = text(result)
    assert "Traceback" not in output and "def test_" not in output, output
    assert "HarnessError: the key selector raised TypeError: string indices must be integers" in output
