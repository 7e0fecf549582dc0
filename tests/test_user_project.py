"""streamproof installed into someone else's repository: a scratch project with its own `model`,
`impl` and `properties` packages and a conftest.py, a fresh venv holding only the wheel built from
this checkout; pytest (with the plugin, a replay, a check and a certification of the project's own
operator) and the `streamproof` CLI pass there, and the project's packages stay its own.

The fresh venv gets the third-party requirements (Hypothesis, z3, click, ...) from this test's
own environment through a path entry, so the test needs no network; streamproof itself comes only
from the wheel (the path entry's .pth files, this checkout's editable install among them, are not
processed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("model", "impl", "properties", "spark_harness", "streamproof", "examples", "pyproject.toml", "README.md",
           "LICENSE")
SCENARIO = REPO / "examples" / "timers" / "interrupted-try-advance.json"

pytestmark = pytest.mark.timeout(600)


def sh(args, cwd, timeout=300, **env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "STREAMPROOF_FAMILIES", "PYTEST_ADDOPTS",
                            "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    environ.update(env)
    return subprocess.run([str(a) for a in args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of this checkout's sources (the checkout stays clean)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("wheel")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, src / name)
    proc = sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
               "-q", "-w", out, src], cwd=src)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("streamproof-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    """A fresh venv with only the streamproof wheel installed (requirements reachable by path)."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    proc = sh([sys.executable, "-m", "venv", root], cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    python = root / "bin" / "python"
    site = Path(sh([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).stdout.strip())
    (site / "requirements-from-parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = sh([python, "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "-q", wheel],
              cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A user's repository: its own model/, impl/, properties/, an operator, a conftest and tests."""
    root = tmp_path_factory.mktemp("userproject")
    for package in ("model", "impl", "properties"):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(f'OWNER = "user"\nNAME = "{package}"\n')
    (root / "properties" / "registry.py").write_text("PROPERTIES = ['mine']\n")
    (root / "model" / "orders.py").write_text("def total(xs):\n    return sum(xs)\n")
    shutil.copy(SCENARIO, root / "scenario.json")
    (root / "myops.py").write_text(textwrap.dedent('''
        from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, MapStateDescriptor
        from model.orders import total   # the project's own model package


        class HourlyTotal(KeyedProcessFunction):
            """Tumbling 10-unit event-time windows: the total of each key's values per window."""

            def open(self, ctx):
                self.values = ctx.get_map_state(MapStateDescriptor("values"))

            def process_element(self, value, ctx, out):
                end = (ctx.timestamp() // 10 + 1) * 10 - 1
                self.values.put(end, self.values.get(end, []) + [value])
                ctx.timer_service().register_event_time_timer(end)

            def on_timer(self, timestamp, ctx, out):
                out.collect((ctx.get_current_key(), timestamp, total(self.values.get(timestamp, []))))
                self.values.remove(timestamp)
    '''))
    (root / "alerts.py").write_text(textwrap.dedent('''
        """A PyFlink operator as its author wrote it, with only `pyflink` changed to `streamproof.flink`."""
        from streamproof.flink.common import Types
        from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
        from streamproof.flink.datastream.state import ValueStateDescriptor

        TIMEOUT = 60_000


        class IdleAlert(KeyedProcessFunction):
            def open(self, runtime_context: RuntimeContext):
                self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

            def process_element(self, value, ctx: "KeyedProcessFunction.Context"):
                self.last.update(ctx.timestamp())
                ctx.timer_service().register_event_time_timer(ctx.timestamp() + TIMEOUT)

            def on_timer(self, timestamp, ctx: "KeyedProcessFunction.OnTimerContext"):
                # every timeout since a record, whatever came after it (reads no state: safe to
                # split, where "the last record now" would not be)
                yield ctx.get_current_key(), timestamp


        def records():
            from hypothesis import strategies as st
            return st.tuples(st.sampled_from(["u1", "u2", "u3"]), st.integers(0, 4 * TIMEOUT))


        def key(record):
            return record[0]


        def timestamp(record):
            return record[1]
    '''))
    (root / "conftest.py").write_text(textwrap.dedent('''
        import model, properties.registry   # the project's own packages, imported first
        assert model.OWNER == "user" and properties.registry.PROPERTIES == ["mine"]
    '''))
    (root / "test_user.py").write_text(textwrap.dedent('''
        import pytest
        import impl, model, properties
        import streamproof


        def test_the_projects_packages_are_its_own():
            assert (model.OWNER, impl.OWNER, properties.OWNER) == ("user", "user", "user")
            assert streamproof.__file__.endswith("streamproof/__init__.py") and "site-packages" in streamproof.__file__


        def test_replay(streamproof_replay):
            assert streamproof_replay(streamproof.load_scenario_file("scenario.json")).holds


        @pytest.mark.streamproof(property="mailbox.differential")
        def test_check(streamproof_check):
            assert streamproof_check(examples=20).holds


        def test_certify_my_operator(streamproof_certify):
            certificate = streamproof_certify("myops:HourlyTotal", examples=15)
            assert certificate.holds, certificate.markdown()


        def test_certify_my_pyflink_operator(streamproof_certify):
            certificate = streamproof_certify("alerts:IdleAlert", examples=30)
            assert certificate.status == "certified", certificate.markdown()
    '''))
    return root


def test_the_wheel_installs_one_top_level_name(wheel):
    with zipfile.ZipFile(wheel) as whl:
        top = {name.split("/")[0] for name in whl.namelist()}
        names = set(whl.namelist())
    assert top == {"streamproof", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for package in ("model", "impl", "properties", "spark_harness", "properties/timers", "properties/valve"):
        assert f"streamproof/{package}/__init__.py" in names
    assert "streamproof/properties/schemas/scenario.schema.json" in names
    for template in ("properties/templates/base.html.j2", "properties/templates/certificate.html.j2",
                     "properties/templates/style.css", "spark_harness/templates/report.html.j2",
                     "templates/explain.html.j2"):
        assert f"streamproof/{template}" in names, template


def test_the_wheels_metadata(wheel):
    """What PyPI and pip show: one version (streamproof.__version__), an SPDX licence with its
    file, classifiers, URLs, a core without z3 or PySpark, and the extras."""
    import email

    import streamproof

    with zipfile.ZipFile(wheel) as whl:
        (name,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(whl.read(name))
        licence = [n for n in whl.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert meta["Version"] == streamproof.__version__ and wheel.name.startswith(f"streamproof-{streamproof.__version__}-")
    assert meta["License-Expression"] == "Apache-2.0" and meta["License"] is None and licence
    classifiers = meta.get_all("Classifier")
    assert {"Framework :: Pytest", "Framework :: Hypothesis", "Programming Language :: Python :: 3.11"} <= set(classifiers)
    assert not [c for c in classifiers if c.startswith("License ::")]  # the SPDX expression says it
    assert len(meta.get_all("Project-URL")) >= 1
    requires = meta.get_all("Requires-Dist")
    core = {r.split(">")[0].split("=")[0].split("[")[0].strip() for r in requires if "extra ==" not in r}
    assert core == {"hypothesis", "pytest", "click", "rich", "jinja2", "markdown-it-py"}, core
    extras = set(meta.get_all("Provides-Extra"))
    assert {"prove", "spark", "pyflink", "flink", "dev"} <= extras
    assert any(r.startswith("z3-solver") and 'extra == "prove"' in r for r in requires)


def test_a_test_module_importing_a_missing_pyflink_says_what_to_install(venv, tmp_path):
    (tmp_path / "conftest.py").write_text("import sys\nsys.modules['pyflink'] = None  # as if not installed\n")
    (tmp_path / "test_op.py").write_text("from pyflink.datastream import KeyedProcessFunction\n\n"
                                         "def test_nothing():\n    assert KeyedProcessFunction\n")
    proc = sh([venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", tmp_path, tmp_path],
              cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert "pip install 'streamproof[pyflink]'" in proc.stdout and "streamproof.flink" in proc.stdout, proc.stdout


def test_only_streamproof_is_importable_in_the_fresh_venv(venv, tmp_path):
    python = venv / "bin" / "python"
    bare = sh([python, "-c", "import model"], cwd=tmp_path)
    assert bare.returncode != 0 and "No module named 'model'" in bare.stderr
    for name in ("impl", "properties", "spark_harness"):
        assert sh([python, "-c", f"import {name}"], cwd=tmp_path).returncode != 0, name
    ok = sh([python, "-c", "import streamproof.model, streamproof.impl, streamproof.properties; "
                           "print(streamproof.properties.__file__)"], cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert str(venv) in ok.stdout  # the wheel's copy, not this checkout


def test_pytest_with_the_plugin_in_the_users_project(venv, project):
    proc = sh([venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", project, project],
              cwd=project)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "5 passed" in proc.stdout


def test_the_cli_in_the_users_project(venv, project):
    cli = venv / "bin" / "streamproof"
    assert sh([cli, "--version"], project).stdout.startswith("streamproof ")
    replay = sh([cli, "replay", "scenario.json"], project)
    assert replay.returncode == 0 and "verdict: held" in replay.stdout, replay.stdout + replay.stderr
    certify = sh([cli, "certify", "myops:HourlyTotal", "--examples", "15", "--out", "cert"], project)
    assert certify.returncode == 0, certify.stdout + certify.stderr
    assert (project / "cert" / "certificate.json").exists()
    written = sh([cli, "examples", "ex"], project)  # the examples the docs use, from the wheel
    assert written.returncode == 0 and (project / "ex" / "jobs" / "real" / "event_time_timer.py").exists(), written.stderr
    replayed = sh([cli, "replay", "ex/timers/interrupted-try-advance.json"], project)
    assert replayed.returncode == 0 and "verdict: held" in replayed.stdout, replayed.stdout + replayed.stderr
    bad = sh([cli, "certify", "model:Nothing"], project)  # the user's model package, no such class
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "model" in bad.stderr, bad.stderr


def test_profile_seed_marker_harness_and_out_folder_from_the_wheel(venv, project, tmp_path):
    """`pytest --hypothesis-profile=dev --hypothesis-seed=3 --streamproof-out=DIR` in a user's
    project: the profile sets the examples, the seed reaches the certificate, a marker wins over
    both, the certificates land in DIR, and the harness fixture runs the project's operator."""
    (tmp_path / "test_conventions.py").write_text(textwrap.dedent('''
        import json
        import pytest
        from alerts import IdleAlert


        def test_examples_with_the_harness(streamproof_harness):
            h = streamproof_harness(IdleAlert, key_selector=lambda r: r[0], timestamp=lambda r: r[1])
            h.process_element(("u1", 0)).process_element(("u2", 5)).process_watermark(60_000)
            h.assert_output([("u1", 60_000)])


        def budget(out):
            document = json.loads(next(out.rglob("certificate.json")).read_text())
            return document["examples"], document["seed"]


        def test_the_options(streamproof_certify, streamproof_out):
            streamproof_certify("alerts:IdleAlert")
            assert budget(streamproof_out) == (50, 3)


        @pytest.mark.streamproof(examples=12, seed=9)
        def test_the_marker(streamproof_certify, streamproof_out):
            streamproof_certify("alerts:IdleAlert")
            assert budget(streamproof_out) == (12, 9)
    '''))
    out = tmp_path / "artifacts"
    proc = sh([venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", tmp_path,
               "--hypothesis-profile=dev", "--hypothesis-seed=3", f"--streamproof-out={out}", tmp_path],
              cwd=project, PYTHONPATH=str(project))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "3 passed" in proc.stdout
    assert sorted(p.parent.name for p in out.rglob("certificate.json")) == [
        "test_conventions.py__test_the_marker", "test_conventions.py__test_the_options"]
