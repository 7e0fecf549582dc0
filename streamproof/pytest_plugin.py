"""The streamproof pytest plugin (entry point ``pytest11``; docs/user-guide.md, "In your own pytest suite").

* marker ``@pytest.mark.streamproof(property=NAME, examples=N, seed=S)``: the property a test is
  about (``streamproof_check`` uses it when called without a name) and its budget;
* fixture ``streamproof_harness``: ``streamproof_harness(operator, key_selector=None, **options)``,
  :func:`streamproof.testing.harness` (example-based tests of an operator or a job, docs/testing.md);
* fixture ``streamproof_replay``: :func:`streamproof.replayer.replay`, to check a scenario;
* fixture ``streamproof_check``: ``streamproof_check(property=None, examples=None, seed=None, *,
  expect_failure=False)`` explores a property with Hypothesis and returns the
  :class:`~streamproof.properties.explore.Exploration`;
* fixture ``streamproof_certify``: ``streamproof_certify(target, examples=None, seed=None, *,
  expect_failure=False, on_flink=False, **input)`` certifies an operator or a job
  (:func:`streamproof.certify_api.certify`) and returns its certificate;
* fixture ``streamproof_out``: the test's own folder for what streamproof writes,
  ``--streamproof-out DIR`` (ini ``streamproof_out``; default ``<rootdir>/streamproof-out/pytest``)
  ``/<the test's node id, sanitized>/``, kept after the run.

The conventions (docs/decisions.md, "pytest conventions"):

* examples and seed: the fixture call's argument, else the closest marker's, else for the seed
  ``--hypothesis-seed`` and for examples the ``max_examples`` of a profile chosen with
  ``--hypothesis-profile``, else 100 examples per property (50 random scenarios for a job) and seed 0;
* the profiles ``dev`` and ``campaign`` (and ``ci`` where Hypothesis has none of its own) are
  registered before Hypothesis loads ``--hypothesis-profile``, never replacing one the project
  registered itself;
* a property that does not hold, a certificate that is not "certified", fails the test from
  the fixture: one paragraph (what failed, why, the counterexample file, the command that replays
  it), no traceback; ``expect_failure=True`` returns the outcome instead (and fails the test if it
  held); bad input (an operator that cannot be loaded, an unknown property) is one line;
* an exception whose class says ``streamproof_one_line = True`` (CertifyError, JobCertifyError,
  ScenarioError, streamproof.testing.HarnessError) raised by the test itself is reported as ``ClassName: message``;
* explorations use the example database of the active Hypothesis settings (the ``default``
  profile has one in ``.hypothesis/``; ``dev``, ``ci`` and ``campaign`` have none), so a failure
  found before is tried first.

Everything heavy is imported inside the fixtures: loading the plugin costs nothing in a session
that does not use it.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

MARKER = "streamproof"
OUT_DEFAULT = ("streamproof-out", "pytest")  # under the rootdir
OPERATOR_EXAMPLES = 100  # the fixtures' built-in defaults (streamproof.certify_api's, and a property's)
JOB_EXAMPLES = 50


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("streamproof")
    group.addoption("--streamproof-out", dest="streamproof_out", default=None, metavar="DIR",
                    help="where the streamproof fixtures write certificates and counterexamples, a folder per "
                         "test [default: the ini option streamproof_out, else <rootdir>/streamproof-out/pytest]")
    parser.addini("streamproof_out", "where the streamproof fixtures write (see --streamproof-out)", default="")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(property=NAME, examples=N, seed=S): the streamproof property this test checks (the default of "
        "the streamproof_check fixture) and the examples and seed of its streamproof fixtures",
    )
    # before Hypothesis's own plugin loads --hypothesis-profile (tryfirst): our profiles must exist
    if config.getoption("hypothesis_profile", None) or "hypothesis" in sys.modules:
        from streamproof.properties import profiles

        # a profile of the same name the project registered (its conftest) is kept, and so is
        # Hypothesis's own `ci` (loaded by Hypothesis in CI: the project's own tests keep it)
        profiles.register(over_hypothesis=False)


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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that raised one of streamproof's one-line errors (its class has
    ``streamproof_one_line = True``): the report is that line, without a traceback."""
    report = yield
    excinfo = call.excinfo
    if report.failed and excinfo is not None and getattr(excinfo.type, "streamproof_one_line", False) is True:
        report.longrepr = f"{excinfo.type.__name__}: {_first_line(excinfo.value)}"
    return report


def _first_line(error: BaseException) -> str:
    text = str(error)
    return text.splitlines()[0] if text else ""


# -- where the fixtures write ----------------------------------------------------------------------
def out_root(config: pytest.Config) -> Path:
    """``--streamproof-out`` (relative to the directory pytest was run from), else the ini option
    ``streamproof_out`` (relative to the ini file's directory), else ``<rootdir>/streamproof-out/pytest``."""
    given = config.getoption("streamproof_out", None)
    if given:
        path = Path(given)
        return path if path.is_absolute() else Path(config.invocation_params.dir) / path
    ini = config.getini("streamproof_out")
    if ini:
        path = Path(str(ini))
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        return path if path.is_absolute() else base / path
    return config.rootpath.joinpath(*OUT_DEFAULT)


def folder_name(nodeid: str) -> str:
    """A test's node id as a folder name: ``tests/test_ops.py::test_counter`` is
    ``tests_test_ops.py__test_counter``; characters other than letters, digits, ``.``, ``-`` and
    ``_`` become ``_``; a long id is cut and ends with a digest of the whole."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", nodeid.replace("::", "__").replace("/", "_")).strip(".") or "test"
    if len(name) > 120:
        name = f"{name[:100]}-{hashlib.sha1(nodeid.encode()).hexdigest()[:12]}"
    return name


class TestFolder:
    """A test's folder under the out root, made (emptied of an earlier run's files) on first use."""

    __test__ = False  # not a test class

    def __init__(self, path: Path) -> None:
        self.path = path
        self.made = False
        self.calls = 0

    def folder(self) -> Path:
        if not self.made:
            if self.path.is_dir() and not self.path.is_symlink():
                shutil.rmtree(self.path)  # an earlier run's counterexamples must not pass for this run's
            self.path.mkdir(parents=True, exist_ok=True)
            self.made = True
        return self.path

    def for_certificate(self) -> Path:
        """Where a certification writes: the test's folder, a second one in the same test ``2/``, ..."""
        self.calls += 1
        folder = self.folder()
        return folder if self.calls == 1 else folder / str(self.calls)


@pytest.fixture
def _streamproof_folder(request: pytest.FixtureRequest) -> TestFolder:
    return TestFolder(out_root(request.config) / folder_name(request.node.nodeid))


@pytest.fixture
def streamproof_out(_streamproof_folder: TestFolder) -> Path:
    """The test's folder for what streamproof writes (a :class:`pathlib.Path`, created), kept after
    the run: ``--streamproof-out DIR/<the test's node id, sanitized>``."""
    return _streamproof_folder.folder()


# -- examples and seed -----------------------------------------------------------------------------
def budget(request: pytest.FixtureRequest, examples: int | None, seed: Any, default_examples: int) -> tuple[int, Any]:
    """(examples, seed): the call's, else the closest ``streamproof`` marker's, else for the seed
    ``--hypothesis-seed`` and for examples the ``max_examples`` of the profile given with
    ``--hypothesis-profile``, else ``default_examples`` and 0."""
    marker = request.node.get_closest_marker(MARKER)
    marked = marker.kwargs if marker is not None else {}
    config = request.config
    if examples is None:
        examples = marked.get("examples")
    if examples is None and config.getoption("hypothesis_profile", None):
        from hypothesis import settings

        examples = settings().max_examples
    if examples is None:
        examples = default_examples
    if seed is None:
        seed = marked.get("seed")
    if seed is None:
        seed = config.getoption("hypothesis_seed", None)  # None when Hypothesis's plugin is disabled
        if isinstance(seed, str):
            seed = int(seed) if re.fullmatch(r"-?\d+", seed.strip()) else seed
    if seed is None:
        seed = 0
    return examples, seed


def _database():
    """The example database of the active Hypothesis settings (None: none)."""
    from hypothesis import settings

    return settings().database


def _marked_property(request: pytest.FixtureRequest) -> str | None:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return None
    return marker.kwargs.get("property", marker.args[0] if marker.args else None)


def _short(text: Any, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _bad_input() -> tuple[type, ...]:
    from streamproof.properties.certify_load import CertifyError
    from streamproof.properties.certify_job_runs import JobCertifyError
    from streamproof.properties.scenario import ScenarioError

    return CertifyError, JobCertifyError, ScenarioError


# -- the fixtures ----------------------------------------------------------------------------------
@pytest.fixture
def streamproof_harness():
    """``harness(operator, key_selector=None, **options)``: :func:`streamproof.testing.harness` (a
    keyed or non-keyed function, or a job; docs/testing.md); the harnesses it made are closed
    (the operators' ``close()``) when the test ends."""
    from streamproof import testing

    made: list = []

    def harness(operator: Any, key_selector: Any = None, **options: Any) -> Any:
        made.append(testing.harness(operator, key_selector, **options))
        return made[-1]

    yield harness
    for h in made:
        close = getattr(h, "close", None)
        if close is not None:
            close()


@pytest.fixture
def streamproof_replay() -> Callable:
    """``replay(scenario) -> ReplayResult``."""
    from streamproof.replayer import replay

    return replay


@pytest.fixture
def streamproof_check(request: pytest.FixtureRequest, _streamproof_folder: TestFolder) -> Callable[..., Any]:
    """``check(property=None, examples=None, seed=None, *, expect_failure=False) -> Exploration``;
    the property defaults to the test's ``@pytest.mark.streamproof(property=...)``. A property that
    does not hold fails the test (one paragraph; its scenario in :func:`streamproof_out`), unless
    ``expect_failure``: then the exploration is returned, and a property that held fails the test."""

    def check(property: str | None = None, examples: int | None = None, seed: Any = None, *,
              expect_failure: bool = False) -> Any:
        from streamproof.properties import registry
        from streamproof.properties.explore import explore

        name = property or _marked_property(request)
        if name is None:
            pytest.fail("streamproof_check needs a property name or @pytest.mark.streamproof(property=...)",
                        pytrace=False)
        try:
            prop = registry.get(name)
        except KeyError as e:
            raise pytest.fail.Exception(f"streamproof_check: {e}", pytrace=False) from None
        examples, seed = budget(request, examples, seed, OPERATOR_EXAMPLES)
        try:
            exploration = explore(prop, examples, seed=seed, database=_database())
        except _bad_input() as e:
            raise pytest.fail.Exception(f"{type(e).__name__}: {_first_line(e)}", pytrace=False) from None
        if exploration.holds:
            if expect_failure:
                pytest.fail(f"streamproof: {name} held in {exploration.examples} examples (seed {seed}), but "
                            "expect_failure=True", pytrace=False)
            return exploration
        if expect_failure:
            return exploration
        pytest.fail(_exploration_paragraph(exploration, seed, _streamproof_folder), pytrace=False)

    return check


def _exploration_paragraph(e: Any, seed: Any, folder: TestFolder) -> str:
    from streamproof.properties.scenario import dump_scenario

    head = (f"streamproof: {e.property} does not hold: {e.invariant} after {e.examples} examples (seed {seed}): "
            f"{_short(e.message)}")
    if e.scenario is None:
        return head + "\n  (no scenario was recorded for this failure)"
    path = folder.folder() / f"{e.property}.json"
    path.write_text(dump_scenario(e.scenario, indent=2) + "\n", encoding="utf-8")
    return f"{head}\n  scenario: {path}\n  replay: streamproof replay {path}"


@pytest.fixture
def streamproof_certify(request: pytest.FixtureRequest, _streamproof_folder: TestFolder) -> Callable[..., Any]:
    """``certify(target, examples=None, seed=None, *, expect_failure=False, on_flink=False, **input)``:
    one operator (``"module:Class"``, the class, an instance, a function returning one; ``input``:
    ``args``, ``records``, ``stream``, ``key``, ``timestamp``, ``span``, ``layout``, ``late``) or a job
    (``"path/job.py"``, ``"package.job"``, a build function; ``records``, ``on_flink``), as
    :func:`streamproof.certify` takes them. The certificate and its counterexamples go to
    :func:`streamproof_out`. A certificate that is not "certified" fails the test with one
    paragraph, unless ``expect_failure``: then it is returned (and a certified one fails the test)."""

    def run(target: Any, examples: int | None = None, seed: Any = None, *, expect_failure: bool = False,
            on_flink: bool = False, **given: Any) -> Any:
        from streamproof.certify_api import certify, is_job

        job = is_job(target)
        examples, seed = budget(request, examples, seed, JOB_EXAMPLES if job else OPERATOR_EXAMPLES)
        out = _streamproof_folder.for_certificate()
        try:
            certificate = certify(target, examples, seed, out, on_flink=on_flink,
                                  database=None if job else _database(), **given)
        except _bad_input() as e:
            raise pytest.fail.Exception(f"{type(e).__name__}: {_first_line(e)}", pytrace=False) from None
        subject = getattr(certificate, "target", None) or certificate.operator
        if certificate.holds:
            if expect_failure:
                pytest.fail(f"streamproof: {subject} is {certificate.status}, but expect_failure=True "
                            f"(certificate: {out / 'certificate.md'})", pytrace=False)
            return certificate
        if expect_failure:
            return certificate
        pytest.fail(certificate_paragraph(certificate, out, examples, seed), pytrace=False)

    return run


def certificate_paragraph(certificate: Any, out: Path, examples: int, seed: Any) -> str:
    """Why a certificate (an operator's or a job's) is not "certified", in a few lines: each
    property that did not hold with its message, its counterexample file and replay command."""
    from streamproof.certify_api import counterexample_files

    files = counterexample_files(certificate, out)
    job = hasattr(certificate, "counterexamples")
    subject = certificate.target if job else certificate.operator
    budget_text = (f"its plan and {examples} random scenarios" if job else f"{examples} scenarios per property")
    lines = [f"streamproof: {subject} is {certificate.status} ({budget_text}, seed {seed}; certificate: "
             f"{out / 'certificate.md'})"]
    results = certificate.results.items() if job else ((r["property"], r) for r in certificate.results)
    for prop, r in results:
        if r["verdict"] in ("held", "not applicable"):
            continue
        line = f"  {prop} {r['verdict']}"
        if r["verdict"] == "failed":  # an operator's count ends at its first failure; a job's is every scenario run
            count = r.get("scenarios") if job else r.get("examples")
            if count:
                line += f" ({count} {'scenario' if count == 1 else 'scenarios'})" if job else \
                    f" after {count} {'scenario' if count == 1 else 'scenarios'}"
        if r.get("message"):
            line += f": {_short(r['message'])}"
        path, replay = files.get(prop, (None, None))
        if path:
            line += f"\n    counterexample: {path}"
        if replay:
            line += f"\n    replay: {replay}"
        lines.append(line)
    flink = getattr(certificate, "on_flink", None)
    if flink is not None and not flink.exactly_once:
        lines.append("  on Apache Flink: a committed output under a failure is no failure-free run's (certificate.md, "
                     "\"On Apache Flink\")")
    return "\n".join(lines)
