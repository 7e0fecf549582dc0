"""Certification with the user's own records: any JSON-like shape, key selectors and timestamp
assigners, values compared without hashing; vacuous certificates and bad input."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from streamproof.cli import cli
from streamproof.properties import certify as cert
from streamproof.properties.job.values import canonical, decode, encode

OPS = "tests.certify_user_ops"


@pytest.mark.parametrize("value", [
    ("a", 1, 2.5), ["x", ["y", {"k": (1, 2)}]], {"n": float("inf")}, {1, 2, 3}, b"\x00\xff", None, True, "s",
    ((1,), [2], {"a": [3]}),
])
def test_records_survive_the_scenario_file(value):
    assert decode(json.loads(json.dumps(encode(value)))) == value


def test_outputs_compare_by_value_without_hashing():
    assert canonical([1, {"a": [2]}]) == canonical([1, {"a": [2]}])
    assert canonical(float("nan")) == canonical(float("nan")) and math.isnan(decode(encode(float("nan"))))
    assert canonical({3, 1}) == canonical({1, 3})
    assert canonical((1, 2)) != canonical([1, 2])  # a tuple is not a list


def test_an_operator_on_its_own_records_is_certified_and_exercised(tmp_path):
    subject = cert.load(f"{OPS}:AmountPerWindow", records=f"{OPS}:transactions", key="0", timestamp="2")
    c = cert.certify(subject, 80, 0, tmp_path)
    assert c.status == "certified", c.markdown()
    coverage = c.results[0]["coverage"]
    assert coverage["timer fired before end of input"] > 0 and coverage["non-empty output"] > 0
    assert coverage["late record"] > 0 and coverage["failure after a checkpoint"] > 0
    doc = json.loads((tmp_path / "certificate.json").read_text())
    assert doc["input"]["records"] == f"{OPS}:transactions" and doc["source"]["sha256"]
    assert (tmp_path / "certificate.html").read_text().lower().startswith("<!doctype html>")


def test_a_certificate_whose_timers_never_fired_is_not_exercised(tmp_path):
    result = CliRunner().invoke(cli, ["certify", f"{OPS}:HourlyReminder", "--records", f"{OPS}:transactions",
                                      "--key", "0", "--timestamp", "2", "--examples", "40", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "not exercised" in result.output and "timer fired before end of input" in result.output


@pytest.mark.parametrize("args, message", [
    (["--records", f"{OPS}:transactions", "--key", f"{OPS}:list_keys", "--timestamp", "2"],
     "keys are strings, integers, floats, booleans or tuples"),
    (["--records", f"{OPS}:NOT_A_STRATEGY", "--key", "0", "--timestamp", "2"], "neither a strategy"),
    (["--records", f"{OPS}:transactions", "--key", "0", "--timestamp", "1"], "timestamps are integers"),
    (["--records", f"{OPS}:transactions", "--key", "0"], "without --timestamp"),
    (["--records", f"{OPS}:nothing", "--key", "0", "--timestamp", "2"], "has no nothing"),
    (["--args", "{not json"], "not JSON"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = CliRunner().invoke(cli, ["certify", f"{OPS}:AmountPerWindow", *args, "--examples", "5"])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_processing_time_follows_the_input_so_processing_timers_are_certified(tmp_path):
    """Processing time moves with the input (params.processing_time = input), so a processing-time
    timer fires at reproducible points, before end of input, and its output has one reference."""
    subject = cert.load(f"{OPS}:ProcessingTimeoutCount", records=f"{OPS}:transactions", key="0", timestamp="2")
    c = cert.certify(subject, 80, 0, tmp_path)
    assert c.results[0]["coverage"]["timer fired before end of input"] > 0, c.markdown()
    assert c.status == "certified", c.markdown()


BAD = "tests.certify_bad_ops"


def test_unhashable_and_nan_outputs_compare_by_value(tmp_path):
    """Lists, dicts and NaN in the output compare by value: exactly-once holds. (Its timer emits
    the count "now", which a record processed between the parts of a split firing changes: unsafe
    with interruptible timers, like the corpus's event_time_timer_sum.)"""
    c = cert.certify(cert.load(f"{BAD}:NanAndLists"), 40, 0, tmp_path)
    verdicts = {r["property"]: r for r in c.results}
    assert {p for p, r in verdicts.items() if r["verdict"] != "held"} == {"certify.interruptible-timers"}, c.markdown()
    assert verdicts["certify.interruptible-timers"]["invariant"] == "same-output-with-split-firings"
    assert "nan" in verdicts["certify.interruptible-timers"]["message"]


@pytest.mark.parametrize("operator, message", [
    ("WrongSignature", "takes 2 positional arguments"),
    ("Loops", "Loops.process_element"),
    ("Floods", "Floods.process_element emitted more than"),
    ("Exits", "Exits.on_timer called sys.exit(3)"),
    # before: probes and runs fired a million timers each; certify ran past 15 minutes
    ("EndlessChain", "its timers never stop firing"),
])
def test_misbehaving_callbacks_are_one_line_and_exit_2(operator, message):
    result = CliRunner().invoke(cli, ["certify", f"{BAD}:{operator}", "--examples", "5"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    errors = [line for line in lines if not line.startswith("certify [")]  # besides a progress heartbeat (10 s)
    assert len(errors) == 1 and message in errors[0] and errors[0].startswith("streamproof: error: "), result.output


def test_composite_keys_as_pyflink_key_by_gives_them(tmp_path):
    """key_by(lambda r: (r.user, r.amount > 1)): a tuple key, routed by its Java Tuple hashCode, seen
    by the operator as the tuple (ctx.get_current_key())."""
    subject = cert.load(f"{OPS}:AmountPerWindow", records=f"{OPS}:transactions", key=f"{OPS}:composite_keys",
                        timestamp="2")
    c = cert.certify(subject, 40, 0, tmp_path)
    assert c.status == "certified", c.markdown()
    scenario = json.loads(next(tmp_path.glob("*.json")).read_text()) if list(tmp_path.glob("certify.*.json")) else None
    assert scenario is None  # nothing failed


def test_composite_key_groups_follow_java_hash_codes():
    from streamproof.impl.state.key_groups import CompositeKey, java_hash_code

    assert java_hash_code(CompositeKey.of(("a", 1))) == 31 * 97 + 1   # Tuple2.of("a", 1L).hashCode()
    assert java_hash_code(CompositeKey.of(1.5)) == 1073217536          # Double.hashCode(1.5)
    assert java_hash_code(CompositeKey.of(float("nan"))) == 2146959360 and CompositeKey.of(True).hash_code == 1231


def test_side_outputs_are_committed_and_compared_exactly_once(tmp_path):
    c = cert.certify(cert.load(f"{BAD}:SideOutputFromAnAttribute"), 100, 0, tmp_path)
    same = c.results[0]
    assert same["property"] == "certify.same-output" and same["verdict"] == "failed", c.markdown()
    assert "side-output" in same["message"] and same["coverage"]["side output"] > 0


def test_a_looping_callback_is_stopped_even_when_someone_else_holds_sigalrm():
    """pytest-timeout's signal method (and any user's alarm) holds SIGALRM: the callback time limit
    then uses a SIGPROF timer of CPU time instead of giving up (it hung until pytest-timeout)."""
    import signal

    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 3600)
    try:
        result = CliRunner().invoke(cli, ["certify", f"{BAD}:Loops", "--examples", "5"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert result.exit_code == 2 and "Loops.process_element" in result.output, result.output
