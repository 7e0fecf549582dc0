"""Certification of a user's operator (``streamproof certify module:Class``, docs/certify.md).

The operator, a PyFlink ``KeyedProcessFunction`` (imports from ``streamproof.flink``, or a genuine
``pyflink`` one when apache-flink is installed) or one in the ``impl.operators`` style, runs in
random job scenarios built from the user's own records (1-3 sources, out-of-order and late
records, parallelism 1-3, aligned or unaligned checkpoints, failures, failures inside interrupted
timer firings, rescales, end of input with drain) with interruptible timers on. The properties and
their reference (Flink's exactly-once promise) are in :mod:`streamproof.properties.certify_checks`;
the input in :mod:`streamproof.properties.certify_input`. A certificate whose runs never fired a
timer before end of input or never produced output says "not exercised" and is not a pass.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import hashlib
import importlib
import inspect
import itertools
import json
import os
import platform
import re
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction
from streamproof.properties import certify_checks as checks
from streamproof.properties import certify_input as inputs
from streamproof.properties import html_pages
from streamproof.properties.explore import Interrupted, explore
from streamproof.properties.job.functions import FUNCTIONS
from streamproof.properties.registry import Property
from streamproof.properties.scenario import Scenario, ScenarioError, dump_scenario, load_scenario
from streamproof.properties.verdict import Verdict
from streamproof.properties.files import write_atomically

CHECKS = checks.CHECKS
FINDING_ARRIVAL_ORDER = checks.FINDING_ARRIVAL_ORDER


class CertifyError(ValueError):
    """The operator or its input cannot be used (one line; exit 2)."""

    streamproof_one_line = True  # the pytest plugin reports it as one line, without a traceback


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- the operator --------------------------------------------------------------------------
def _adapter():
    try:
        from streamproof.flink import adapter
    except ImportError:  # streamproof.flink not available: impl.operators style only
        return None
    return adapter


def _is_operator_class(obj: Any) -> bool:
    if not isinstance(obj, type):
        return False
    if issubclass(obj, KeyedProcessFunction):
        return True
    adapter = _adapter()
    return adapter is not None and adapter.is_pyflink_style(obj)


@dataclass
class Subject:
    """What is certified: the operator, how to build it, and its input."""

    spec: str
    name: str                                 # params.operator of its scenarios: user:SPEC
    target: Any                               # the class or factory function
    build: Callable[[], Any]                  # a fresh, runnable (adapted) instance
    records: inputs.RecordSpec | None
    span: int
    args: Any
    source_file: str | None
    # why ``streamproof certify`` cannot load it (an object defined inside a function, a lambda):
    # its replay command says so instead; None when ``spec`` is what the command line takes
    not_replayable: str | None = None

    def scenarios(self):
        if self.records is not None:
            return inputs.user_scenarios(self.name, self.records, self.span)
        return inputs.builtin_scenarios(self.name, self.span)


def _split(spec: str) -> tuple[str, str]:
    module_name, sep, name = spec.partition(":")
    if not sep:
        module_name, _, name = spec.rpartition(".")
    if not module_name or not name:
        raise CertifyError(f"{spec!r}: expected module:Class")
    return module_name, name


def _import(spec: str, module_name: str):
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's modules, as `python -m` finds them
    try:
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            from streamproof.flink.capture import bind_missing_pyflink
            if not (e.name or "").split(".")[0] == "pyflink" or not bind_missing_pyflink():
                raise
            return importlib.import_module(module_name)  # written for PyFlink: imported bound to streamproof
    except Exception as e:  # noqa: BLE001 - any import failure is bad input
        raise CertifyError(f"{spec!r}: cannot import {module_name}: {type(e).__name__}: {e}") from None
    except SystemExit as e:
        raise CertifyError(f"{spec!r}: importing {module_name} called sys.exit({e.code})") from None


def load(spec: Any, args: Any = None, records: Any = None, key: Any = None,
         timestamp: Any = None, span: int | None = None, stream: Any = None,
         layout: str | None = None, late: bool | None = None, replay_only: bool = False) -> Subject:
    """The operator ``spec`` and its input. ``spec``: ``"module:Class"`` (a class, or a function
    returning an instance, as the CLI names it), or the object itself: an operator class (a
    PyFlink-style ``KeyedProcessFunction`` or the ``impl.operators`` style), an instance (copied
    afresh for every run, as PyFlink pickles the function to every subtask) or a zero-argument
    function returning one. A class or function is built with ``args`` (a JSON list or object;
    default: its module's ``ARGS``, else none). ``records``/``stream``: ``"module:name"`` or a
    Hypothesis strategy (or a function returning one); ``key``/``timestamp``: ``"module:function"``,
    a field index or name, or a function of a record (:func:`certify_input.record_spec`)."""
    not_replayable = None
    instance = False
    if isinstance(spec, str):
        module_name, name = _split(spec)
        module = _import(spec, module_name)
        target = getattr(module, name, None)
        label = spec
        if target is None:
            raise CertifyError(f"{spec!r}: {name} is not a KeyedProcessFunction subclass in {module_name}")
    else:
        label, module, target, name, not_replayable, instance = _from_object(spec)
        module_name = getattr(module, "__name__", label.partition(":")[0])
    if isinstance(target, type) and not _is_operator_class(target):
        raise CertifyError(f"{label!r}: {name} is not a KeyedProcessFunction subclass in {module_name}")
    if not isinstance(target, type) and not callable(target) and not instance:
        raise CertifyError(f"{label!r}: {name} is neither an operator class nor a function returning one")
    if not isinstance(target, type) and not instance:
        job = _runs_a_job(target)
        if job:  # never called: it would run the job for real
            raise CertifyError(f"{label!r}: {name} builds and runs a job ({job}); certify never runs it: certify the "
                               f"job's module or file (streamproof certify {module_name}), or give the operator "
                               "class (module:Class) and its input")
    owner = type(target) if instance else target  # the operator's class (or its factory function)
    adapter = _adapter()
    if adapter is not None and isinstance(owner, type):
        reason = adapter.refusal_reason(owner)
        if reason:
            raise CertifyError(f"{label!r}: not supported: {reason}")
    if instance and args is not None:
        raise CertifyError(f"{label!r}: args= builds a class; this operator is an instance, already built")
    if args is None and not instance:
        args = getattr(module, "ARGS", None)
    build = _builder(label, name, target, args, adapter, instance)
    built = build()  # fails here, with one line, if it cannot be built
    if isinstance(owner, type):
        cls = owner
    else:  # a function: the class of what it built (the user's, not the adapter around a PyFlink one)
        wrapped = adapter is not None and isinstance(built, adapter.PyFlinkFunctionAdapter)
        cls = type(built.function if wrapped else built)
    try:
        record_spec = inputs.record_spec(module, records, key, timestamp, stream, layout, late)
    except inputs.InputError as e:
        raise CertifyError(f"{label!r}: {e}") from None
    # the built-in records are impl style only; a replay reads its records from the scenario file
    if record_spec is None and not issubclass(cls, KeyedProcessFunction) and not replay_only:
        raise CertifyError(f"{label!r}: give its input: --records (a Hypothesis strategy of records), --key and "
                           "--timestamp, or define records(), key(record) and timestamp(record) in its module")
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        source = None
    # an object that is not the module-level one its name says, or an instance (its arguments are
    # its own): a name of its own, so that the functions and probes registered by name never mix it
    # up with another operator of the same name
    unique = not isinstance(spec, str) and (instance or not_replayable is not None)
    subject = Subject(label, f"user:{label}" + (f"#{next(_OBJECTS)}" if unique else ""), target, build, record_spec,
                      span if span is not None else inputs.time_span(cls), args, source, not_replayable)
    FUNCTIONS[subject.name] = build
    return subject


_OBJECTS = itertools.count(1)


def _from_object(obj: Any) -> tuple[str, Any, Any, str, str | None, bool]:
    """An operator given as an object: (its name ``module:QualName``, its module, the target, its
    short name, why the command line cannot load it (None: it can), whether it is an instance)."""
    adapter = _adapter()
    if isinstance(obj, type):
        owner, instance = obj, False
    elif isinstance(obj, KeyedProcessFunction) or (adapter is not None and adapter.is_pyflink_style(type(obj))):
        owner, instance = type(obj), True
    elif callable(obj):
        owner, instance = obj, False
    else:
        raise CertifyError(f"{_one_line(repr(obj), 80)}: not an operator: give a KeyedProcessFunction class or "
                           "instance, a function returning one, or 'module:Class'")
    module_name = getattr(owner, "__module__", None) or "?"
    qualname = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None) or type(owner).__name__
    module = sys.modules.get(module_name)
    label = f"{module_name}:{qualname}"
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if "<locals>" in qualname:
        why = "defined inside a function"
    elif "<lambda>" in qualname:
        why = "a lambda"
    elif module_name == "__main__":
        why = "defined in __main__"
    elif found is not owner:
        why = f"{label} does not name it"
    else:
        why = None
    return label, module, obj, qualname.rpartition(".")[2], why, instance


_JOB_CALLS = ("execute", "execute_async", "get_execution_environment", "create_local_environment",
              "create_remote_environment")


def _runs_a_job(function: Any) -> str | None:
    """Where ``function``'s own code starts or runs a Flink job (``env.execute()``,
    ``StreamExecutionEnvironment.get_execution_environment()``), read from its source without
    calling it; None when it does not, or its source cannot be read."""
    import ast
    import textwrap

    try:
        lines, first = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _JOB_CALLS:
            return f"it calls {node.func.attr}() at line {first + node.lineno - 1}"
    return None


def _builder(spec: str, name: str, target: Any, args: Any, adapter, instance: bool = False) -> Callable[[], Any]:
    """A fresh runnable instance per call: ``target`` built with ``args``, or, when ``instance``,
    a copy of the instance ``target`` (never the pristine instance itself: each run, each
    subtask, gets its own, as PyFlink pickles the function to every subtask)."""
    def build() -> Any:
        try:
            if instance:
                built = copy.deepcopy(target)
            elif isinstance(args, dict):
                built = target(**args)
            elif args is not None:
                built = target(*args)
            else:
                built = target()
        except SystemExit as e:
            raise CertifyError(f"{spec!r}: building {name} called sys.exit({e.code})") from None
        except Exception as e:  # noqa: BLE001
            if instance:
                raise CertifyError(f"{spec!r}: the instance cannot be copied for each run (copy.deepcopy: "
                                   f"{type(e).__name__}: {e}); give its class or a function returning a new "
                                   "instance") from None
            hint = "" if args is not None else " (give --args, or ARGS in its module)"
            raise CertifyError(f"{spec!r}: {name}() cannot be built{' without arguments' if args is None else ''}: "
                               f"{type(e).__name__}: {e}{hint}") from None
        if adapter is not None:
            built = adapter.adapt(built)
        if not isinstance(built, KeyedProcessFunction):
            raise CertifyError(f"{spec!r}: {name} built {type(built).__name__}, not a KeyedProcessFunction")
        built.interruptible_timers = True  # the question certification answers (FLIP-443)
        return built
    return build


def properties_for(subject: Subject) -> list[Property]:
    """The certification properties of ``subject``, runnable by :func:`explore`."""
    def scenarios():
        return subject.scenarios()

    return [Property(prop, "job", f"certification of {subject.spec}: {checks.SUMMARIES[prop]}",
                     check=(lambda p: lambda scenario: checks.check(p, _named(subject, scenario)))(prop),
                     strategy=scenarios, reachability=checks.COVERAGE)
            for prop in CHECKS]


def _named(subject: Subject, scenario: Scenario) -> Scenario:
    if scenario.params.get("operator") == subject.name:
        return scenario
    return dataclasses.replace(scenario, params={**scenario.params, "operator": subject.name})


# -- pre-flight ----------------------------------------------------------------------------
_SIGNATURE = re.compile(r"(takes \d+ positional argument|missing \d+ required positional argument|"
                        r"got an unexpected keyword argument|object is not iterable|not callable)")


def preflight(subject: Subject) -> None:
    """One small failure-free job of a few records: bad input, a wrong signature, a callback that
    loops, floods or exits is one line here (exit 2), before any exploration."""
    from hypothesis.errors import NonInteractiveExampleWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        try:
            scenario = subject.scenarios().example()
        except inputs.InputError as e:
            raise CertifyError(f"{subject.spec!r}: {e}") from None
    steps = tuple(s for s in scenario.steps if type(s).__name__ in ("Record", "UserRecord", "SourceWatermark"))
    small = dataclasses.replace(scenario, steps=steps, params={**scenario.params, "parallelism": 1, "unaligned": False})
    result = checks._run(small, False, 0)
    if isinstance(result, str) and (_SIGNATURE.search(result) or _is_limit(result)):
        raise CertifyError(f"{subject.spec!r}: fails on a failure-free run of its first records: {_one_line(result)}")


def _is_limit(text: str) -> bool:
    return text.startswith(("CallbackLimitExceeded", "UserCodeError", "UnsupportedFeature"))


# -- where the certificate goes ------------------------------------------------------------
def check_out(out: str | os.PathLike) -> Path:
    """``out`` as a directory the certificate can go to, checked before any work: an existing
    writable directory, or a new one in an existing writable directory (never a chain of
    directories: a typo must not create a tree somewhere, e.g. at the filesystem root)."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise CertifyError(f"--out {out}: exists and is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise CertifyError(f"--out {out}: directory not writable")
        return path
    parent = path.absolute().parent
    if not parent.exists():
        raise CertifyError(f"--out {out}: its parent directory {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise CertifyError(f"--out {out}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CertifyError(f"--out {out}: cannot create it, {parent} is not writable")
    return path


# -- the certificate -----------------------------------------------------------------------
@dataclass
class Certificate:
    operator: str
    examples: int
    seed: int
    results: list = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    command: str = ""
    date: str = ""
    input: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return all(r["verdict"] == "held" for r in self.results)

    @property
    def status(self) -> str:
        if any(r["verdict"] == "failed" for r in self.results):
            return "not certified"
        if any(r["verdict"] == "not exercised" for r in self.results):
            return "not exercised"
        return "certified"

    def to_json(self) -> dict:
        return {"operator": self.operator, "certified": self.holds, "status": self.status, "date": self.date,
                "command": self.command, "examples": self.examples, "seed": self.seed, "source": self.source,
                "input": self.input, "results": self.results, "findings": self.findings, "versions": self.versions}

    def markdown(self) -> str:
        lines = [f"# Certificate: `{self.operator}`", "",
                 f"**{self.status}** on {self.date}: {self.examples} job scenarios asked for per property, seed "
                 f"{self.seed}, interruptible timers on, checkpoints, failures and rescales, against Flink's "
                 "exactly-once promise (the committed output equals a failure-free run's).", "",
                 f"*examples* is the number of job scenarios each property ran: the {self.examples} asked for when it "
                 "held; when it failed, those up to and including the first failing one (the re-runs that minimised "
                 "the counterexample are not counted).", "",
                 f"- command: `{self.command}`",
                 f"- source: `{self.source.get('file')}` sha256 `{self.source.get('sha256')}`"
                 + (f", git commit `{self.source['git_commit']}`" if self.source.get("git_commit") else ""),
                 f"- input: {', '.join(f'{k} `{v}`' for k, v in self.input.items() if v is not None)}",
                 "- versions: " + ", ".join(f"{k} {v}" for k, v in self.versions.items()), "",
                 "| property | verdict | examples | seconds | invariant | counterexample |", "|---|---|---|---|---|---|"]
        for r in self.results:
            lines.append(f"| `{r['property']}` | {r['verdict']} | {r['examples']} | {r['seconds']:.1f} | "
                         f"{r['invariant'] or ''} | {r['scenario_file'] or ''} |")
        lines += ["", "## Coverage (of each property's examples, how many exercised each case)", "",
                  "| property | " + " | ".join(checks.COVERAGE) + " |", "|---|" + "---|" * len(checks.COVERAGE)]
        for r in self.results:
            lines.append(f"| `{r['property']}` | " + " | ".join(str(r["coverage"].get(c, 0)) for c in checks.COVERAGE) + " |")
        lines += ["", "A case counts once per scenario however often it happened in it (the faulty run and its "
                      "failure-free references); each number is at most that row's examples."]
        details = [r for r in self.results if r["message"]]
        if details:
            lines += ["", "## Why"] + [f"- `{r['property']}`: {r['message']}" + (
                f" Replay: `{r['replay']}`" if r.get("replay") else "") for r in details]
        for r in self.results:
            if r.get("trace"):
                lines += ["", f"## `{r['property']}`: the counterexample, faulty run beside a failure-free run", "",
                          "```", *r["trace"], "```"]
        if self.findings:
            lines += ["", "## Findings (not faults)"] + [f"- {f['finding']} ({f['scenarios']} scenarios): {f['hint']}"
                                                          for f in self.findings]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        """The certificate's Markdown rendered as a page, with a status banner."""
        return html_pages.certificate_page(self.markdown(), self.status, f"Certificate {self.operator}")

    def write(self, out: Path) -> None:
        out.mkdir(exist_ok=True)  # its parent was checked (check_out): no tree of new directories
        write_atomically(out / "certificate.json", json.dumps(self.to_json(), indent=2) + "\n")
        write_atomically(out / "certificate.md", self.markdown())
        write_atomically(out / "certificate.html", self.html())


def _source_info(path: str | None) -> dict:
    if not path or not os.path.exists(path):
        return {"file": path, "sha256": None, "git_commit": None}
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    commit = None
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=os.path.dirname(os.path.abspath(path)),
                              capture_output=True, text=True, timeout=5)
        if proc.returncode == 0:
            commit = proc.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"file": os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path,
            "sha256": digest, "git_commit": commit}


def _command(subject: Subject, examples: int, seed: int) -> str:
    if subject.not_replayable is not None:
        return (f"streamproof.certify({subject.spec}, examples={examples}, seed={seed}) from Python (not from the "
                f"command line: it is {subject.not_replayable})")
    return f"streamproof certify {subject.spec} --examples {examples} --seed {seed}"


def _replay_command(subject: Subject, path: str) -> str:
    if subject.not_replayable is not None:
        return (f"not replayable from the command line: {subject.spec} is {subject.not_replayable} (at module "
                f"level it would be: streamproof certify module:Class --replay {path})")
    parts = ["streamproof", "certify", subject.spec, "--replay", path]
    if subject.args is not None:
        parts += ["--args", json.dumps(subject.args)]
    return " ".join(parts)


def _trace(scenario: Scenario) -> list[str]:
    """The minimised counterexample as text: its steps, then the faulty run's and a failure-free
    run's committed output and job events, side by side."""
    r = checks.runs(scenario)
    lines = ["steps:"] + [f"  {i:3}  {json.dumps(s.to_json(), separators=(',', ':'))}" for i, s in enumerate(scenario.steps)]
    for title, run in (("faulty run", r.faulty), ("failure-free run (same schedule)", r.off(0))):
        lines.append(f"{title}:")
        if isinstance(run, str):
            lines.append(f"  error: {run}")
            continue
        lines += [f"  event {e[0]} {' '.join(map(str, e[1:]))}" for e in run.events]
        lines += [f"  committed {checks.readable(checks.canonical(v))}" for v in run.committed[:40]]
    return lines


def certify(spec: str | Subject, examples: int, seed: int = 0, out: str | Path | None = None,
            command: str = "", on_result: Callable[[dict], None] | None = None,
            progress: Callable[[str, int, bool], None] | None = None, database=None) -> Certificate:
    """Explores every certification property of the operator (``spec``: what :func:`load`
    takes, or a loaded :class:`Subject`); counterexamples go to ``out`` (checked first:
    :func:`check_out`). ``on_result(result)`` is called as each property finishes (its row of the
    certificate, counterexample written); ``progress(property, examples_done, shrinking)`` as its
    exploration goes. ``database``: a Hypothesis example database whose failures of this operator
    are replayed first (:func:`explore`; the pytest fixture passes the active settings' one)."""
    from streamproof.impl.operators.user_code import release_callback_watchdog

    if out is not None:
        check_out(out)
    subject = spec if isinstance(spec, Subject) else load(spec)
    try:
        return _certify(subject, examples, seed, out, command, on_result, progress, database)
    finally:
        release_callback_watchdog()  # SIGALRM back to whoever had it (pytest-timeout, a Spark deadline)


def _certify(subject: Subject, examples: int, seed: int, out, command: str,
             on_result: Callable[[dict], None] | None = None,
             progress: Callable[[str, int, bool], None] | None = None, database=None) -> Certificate:
    from importlib import metadata

    import hypothesis

    preflight(subject)
    try:
        version = metadata.version("streamproof")
    except metadata.PackageNotFoundError:
        version = "unknown"
    cert = Certificate(subject.spec, examples, seed,
                       versions={"streamproof": version, "hypothesis": hypothesis.__version__,
                                 "python": platform.python_version()},
                       source=_source_info(subject.source_file),
                       command=command or _command(subject, examples, seed),
                       date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       input={**(subject.records.names if subject.records else {"records": "built-in (key, int, ts)"}),
                              "span": subject.span if subject.records is None else None, "args": subject.args})
    found: dict[str, int] = dict.fromkeys(FINDINGS, 0)  # per finding, the scenarios that met it
    broken = None  # a scenario on which the operator fails without any fault: every property reports it
    for prop in properties_for(subject):
        started = time.perf_counter()
        on_progress = None if progress is None else (lambda p: lambda n, shrinking: progress(p, n, shrinking))(prop.name)
        try:
            e = _known_failure(prop, broken) or explore(prop, examples, seed=seed, progress=on_progress,
                                                        shrink="domain", database=database,
                                                        database_key=f"certify {subject.spec} {prop.name}")
        except Interrupted as stop:  # Ctrl-C: a counterexample already found is kept (not minimal)
            stop.property, stop.scenario_file = prop.name, None
            if stop.exploration.scenario is not None and out is not None:
                stop.scenario_file = _write_counterexample(subject, prop.name, stop.exploration, out)
            raise
        if e.invariant == "failure-free-run-finishes" and broken is None:
            broken = e.scenario
        if e.invariant == "crash: InputError":
            raise CertifyError(f"{subject.spec!r}: {e.message}")
        for label in FINDINGS:
            found[label] += e.reach_examples.get(label, 0)  # scenarios, not events
        coverage = {c: e.reach_examples.get(c, 0) for c in checks.COVERAGE}  # examples that exercised c
        if e.scenario is not None and not e.holds:  # the message of the minimised counterexample
            final = prop.check(e.scenario)
            if not final.holds and final.invariant == e.invariant:
                e.message = f"{final.invariant}: {final.message}"
        verdict, message = e.verdict, e.message or None
        unexercised = [c for c in checks.required(prop.name, e.reach_examples) if not e.reach_examples.get(c)]
        never_late = subject.records is not None and not subject.records.late
        if e.holds and unexercised == [checks.SPLIT_CASE] and never_late and \
                e.reach_examples.get(checks.EVENT_TIMERS_MID_STREAM, 0) * 10 >= e.examples:
            # input that is never late (declared): no record of a key with a due timer came after
            # the watermark that made it due, though timers fired mid-stream in many scenarios
            unexercised = []
            message = (f"with input never behind its watermark (--no-late), no record of a key whose timer was due "
                       f"came after that watermark in {e.examples} scenarios (event-time timers fired mid-stream in "
                       f"{e.reach_examples[checks.EVENT_TIMERS_MID_STREAM]}): split firings cannot change what this "
                       "operator sees")
        if e.holds and unexercised:
            verdict = "not exercised"
            message = (f"no scenario had a {' or a '.join(unexercised)}: this certificate would be vacuous; give "
                       + "; ".join(dict.fromkeys(_HINTS[u] for u in unexercised)))
        elif e.holds and prop.name == "certify.interruptible-timers" and not message and not e.reach_examples.get(
                checks.EVENT_TIMERS_MID_STREAM):
            message = ("no event-time timer fired before end of input in any scenario: there was no firing to split "
                       "(FLIP-443 splits event-time firings only)")
        if e.invariant == "same-output-as-a-failure-free-run" and e.scenario is not None:
            message = f"{message}; cause: {checks.explain(e.scenario)}"
        path = trace = replay = None
        if e.scenario is not None and out is not None:
            path = _write_counterexample(subject, prop.name, e, out)
            replay = _replay_command(subject, path)
            trace = _trace(e.scenario)
        cert.results.append({"property": prop.name, "verdict": verdict, "examples": e.examples,
                             "seconds": time.perf_counter() - started, "invariant": e.invariant,
                             "message": message, "scenario_file": path, "replay": replay, "trace": trace,
                             "coverage": coverage})
        if on_result is not None:
            on_result(cert.results[-1])
    for label, (finding, hint) in FINDINGS.items():
        if found[label]:
            cert.findings.append({"finding": finding, "scenarios": found[label], "hint": hint})
    if out is not None:
        cert.write(Path(out))
    return cert


# the findings (reach labels of certify_checks) a certificate reports apart: (what, why not a fault)
FINDINGS = {
    checks.FINDING_ARRIVAL_ORDER: (
        "output depends on arrival order across sources",
        "its failure-free runs of the same input differ between schedules; Flink does not order records of "
        "parallel sources, so this output differs between runs of a real job too. Not blamed on faults: such "
        "scenarios pass same-output when the committed output is one of the failure-free outputs."),
    checks.FINDING_LATE: (
        "output for late records depends on timing",
        "a record at or below its source's watermark changes the output depending on when it meets the timers "
        "(split firings, failover timing); Flink promises nothing there. Every property holds on the same scenarios "
        "without the late records. Use allowed lateness / side outputs for late data if it matters."),
    checks.FINDING_TIE_ORDER: (
        "output depends on the order of equal-timestamp timers",
        "timers of different keys with the same timestamp fire in an order Flink leaves open (a restore fires them "
        "key group by key group), and this operator's output changes with it (state outside keyed state, such as a "
        "field of the function). Not blamed on faults: the same faults with timers fired in key-group order "
        "throughout give a failure-free run's output."),
    checks.FINDING_RESTART_TIME: (
        "output depends on how long a restart takes (processing time)",
        "wall-clock time goes on while a job restarts: after a restore, processing-time timers came due or state TTL "
        "expired that a restart taking no time would have left alone. The committed output is the failure-free "
        f"output of the same input paused as long ({inputs.RESTART_GAP // 1000} s here), so it is not blamed on the "
        "faults; on Flink it differs between a run with failures and one without."),
    checks.FINDING_FLOAT_STATE: (
        "output depends on Types.FLOAT() state precision across a restore",
        "PyFlink's Python state cache hands back the double a function wrote to Types.FLOAT() state; a checkpoint "
        "stores it in single precision and a restore reads that back, so results computed from it after a failure "
        "differ in their last digits (Apache Flink 2.3 does the same). Types.DOUBLE() state keeps them equal."),
}

_HINTS = {
    "timer fired before end of input": "records whose timestamps span the operator's time constants (--records, "
                                       "--stream, --span), so its timers fire mid-stream",
    "non-empty output": "records that make the operator emit (--records / --stream)",
    "failure after a checkpoint": "more records per scenario (--records / --stream), so checkpoints complete before "
                                  "failures",
    "restore with pending timers": "records whose timers are still pending at a checkpoint (timestamps spanning the "
                                   "operator's time constants)",
    checks.SPLIT_CASE: "records of several keys with timers due at one watermark and records of those keys after it "
                       "(more records per key: --records / --stream)",
}


def _write_counterexample(subject: Subject, prop: str, e, out) -> str:
    Path(out).mkdir(exist_ok=True)  # its parent was checked (check_out)
    path = str(Path(out) / f"{prop}.json")
    write_atomically(Path(path), dump_scenario(dataclasses.replace(
        e.scenario, name=f"certify-{prop}", description=_one_line(f"{subject.spec}: {e.message}", 500))))
    return path


def _known_failure(prop: Property, scenario: Scenario | None):
    """The exploration of ``prop`` on a scenario where the operator already failed without any
    fault, if it fails there too (no need to search again: same cause)."""
    from streamproof.properties.explore import Exploration

    if scenario is None:
        return None
    verdict = prop.check(scenario)
    if verdict.holds:
        return None
    return Exploration(prop.name, False, 1, len(scenario.steps), 0.0, {}, verdict.invariant,
                       f"{verdict.invariant}: {verdict.message}", dataclasses.replace(scenario, property=prop.name), {})


def replay(spec: str | Subject, path) -> list[Verdict]:
    """The certification verdicts of one scenario file (a counterexample) for the operator
    (its scenarios name it as ``user:SPEC``, known once it is loaded; the operator being
    certified runs it, whichever operator's counterexample it was). Every error names the file:
    :class:`ScenarioError` for an unreadable or malformed file, :class:`CertifyError` for a
    scenario that is not a job scenario (another family's)."""
    from streamproof.properties.scenario import load_scenario_file

    subject = spec if isinstance(spec, Subject) else load(spec)
    where = os.fspath(path)
    try:
        data = Path(where).read_bytes()
    except OSError:
        load_scenario_file(where)  # raises its one-line error naming the file
        raise
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        load_scenario_file(where)  # not a JSON object: its one-line error naming the file
        raise ScenarioError(f"{where}: not a scenario file")
    family = doc.get("family")
    if isinstance(family, str) and family != "job":
        raise CertifyError(f"{where}: a '{_one_line(family, 60)}' scenario, not a certification counterexample "
                           f"(a 'job' scenario); replay it with: streamproof replay {where}")
    if isinstance(doc.get("params"), dict):
        doc["params"]["operator"] = subject.name
    try:
        scenario = load_scenario(json.dumps(doc))
    except ScenarioError as e:
        raise e.with_prefix(where) from None
    return [prop.check(scenario) for prop in properties_for(subject)]


__all__ = ["Certificate", "CertifyError", "Subject", "certify", "check_out", "load", "properties_for", "replay"]
