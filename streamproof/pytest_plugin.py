"""The streamproof pytest plugin (entry point ``pytest11``).

* marker ``@pytest.mark.streamproof(property="timers.differential")``: names the property a test
  is about (``streamproof_check`` uses it when called without a name);
* fixture ``streamproof_replay``: :func:`streamproof.replayer.replay`, to check a scenario;
* fixture ``streamproof_check``: ``streamproof_check(property=None, examples=100, seed=0)``
  explores a property with Hypothesis and returns the
  :class:`~streamproof.properties.explore.Exploration` (it asserts nothing: the test decides);
* fixture ``streamproof_certify``: ``streamproof_certify("module:Class", examples=100, seed=0, **input)``
  certifies a user's operator and returns the :class:`~streamproof.properties.certify.Certificate`.

Everything heavy is imported inside the fixtures: loading the plugin costs nothing in a session
that does not use it.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

MARKER = "streamproof"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(property=NAME): the streamproof property this test checks "
        "(the default of the streamproof_check fixture)",
    )


PYFLINK_HINT = ("pyflink is not installed: install its Python API (pip install 'streamproof[pyflink]', or "
                "pip install --no-deps apache-flink for the API alone), or import the same names from "
                "streamproof.flink; `streamproof certify` binds a missing pyflink to streamproof.flink itself")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A test module that imports a missing pyflink: the collection error says what to install."""
    report = yield
    if report.failed and "No module named 'pyflink" in str(report.longrepr):
        report.sections.append(("streamproof", PYFLINK_HINT))
    return report


def _marked_property(request: pytest.FixtureRequest) -> str | None:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return None
    return marker.kwargs.get("property", marker.args[0] if marker.args else None)


@pytest.fixture
def streamproof_replay() -> Callable:
    """``replay(scenario) -> ReplayResult``."""
    from streamproof.replayer import replay

    return replay


@pytest.fixture
def streamproof_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``check(property=None, examples=100, seed=0) -> Exploration``; the property defaults to
    the test's ``@pytest.mark.streamproof(property=...)``."""

    def check(property: str | None = None, examples: int = 100, seed: int | None = 0) -> Any:
        from streamproof.properties import registry
        from streamproof.properties.explore import explore

        name = property or _marked_property(request)
        if name is None:
            pytest.fail("streamproof_check needs a property name or "
                        "@pytest.mark.streamproof(property=...)", pytrace=False)
        return explore(registry.get(name), examples, seed=seed)

    return check


@pytest.fixture
def streamproof_certify(tmp_path) -> Callable[..., Any]:
    """``certify("module:Class", examples=100, seed=0, *, args=None, records=None, key=None,
    timestamp=None, span=None) -> Certificate`` for one operator, or ``certify("path/job.py" |
    "package.job" | build_function, examples=50, seed=0) -> JobCertificate`` for a job as written
    (docs/certify.md): counterexamples go to the test's ``tmp_path``; the test asserts
    ``certificate.holds``. A job with ``on_flink=True`` also runs on Apache Flink
    (:func:`streamproof.run_on_flink`); its report is ``certificate.on_flink`` and ``holds`` is
    False when Flink committed an output no failure-free run gives."""

    def run(operator: Any, examples: int | None = None, seed: int = 0, on_flink: bool = False, **given: Any) -> Any:
        from streamproof.certify_cli import is_job
        from streamproof.properties import certify_job_report

        if callable(operator) or is_job(operator):
            if given:
                raise TypeError(f"{sorted(given)[0]}= is for one operator; a job brings its own input")
            certificate = certify_job_report.certify(operator, 50 if examples is None else examples, seed,
                                                     str(tmp_path / "certificate"))
            if on_flink:
                from streamproof.on_flink import oracle, report
                from streamproof.properties.certify_job_runs import load_job

                subject = load_job(operator)
                certificate.on_flink = oracle.run_on_flink(subject, subject.pipeline.file)
                report.append(tmp_path / "certificate", certificate.on_flink, "",
                              [p for p, r in certificate.results.items() if r["verdict"] == "failed"])
            return certificate
        if on_flink:
            raise TypeError("on_flink=True runs a job on Apache Flink; a single operator has no job to run")
        from streamproof.properties.certify import certify, load

        return certify(load(operator, **given), 100 if examples is None else examples, seed, tmp_path / "certificate")

    return run
