"""``streamproof.certify(target, ...)``: one operator or a whole job, as ``streamproof certify``
takes them, from Python; the ``streamproof_certify`` fixture calls it too (docs/certify.md, docs/api.md).

What ``target`` is decides what is certified (:func:`is_job`):

* a job: a job file (``"path/job.py"`` or a :class:`os.PathLike`), a job module (``"package.job"``
  or the module object), or a function that builds the pipeline (its code gets an execution
  environment or calls ``execute()``: read from its source, the function is never called);
* one operator: ``"module:Class"``, the class, an instance (copied for every run) or a
  zero-argument function returning one (:func:`streamproof.properties.certify.load`).
"""

from __future__ import annotations

import json
import os
import types
from pathlib import Path
from typing import Any, Callable

OPERATOR_EXAMPLES = 100  # scenarios per property of one operator, when not given
JOB_EXAMPLES = 50        # random scenarios after a job's plan, when not given (certify_job.DEFAULT_EXAMPLES)

_OPERATOR_ONLY = ("args", "stream", "key", "timestamp", "span", "layout", "late")


def is_job(target: Any) -> bool:
    """Is ``target`` a job (a file, a module, a build function) rather than one operator?"""
    if isinstance(target, str):
        return _is_job_name(target)
    if isinstance(target, (os.PathLike, types.ModuleType)):
        return True
    if isinstance(target, type) or not callable(target):
        return False
    from streamproof.properties import certify_load as cert

    if isinstance(target, cert.KeyedProcessFunction):
        return False
    return cert._runs_a_job(target) is not None


def _is_job_name(target: str) -> bool:
    """A job file (``path/job.py``) or a job module (``package.job``, no ``:``)."""
    import importlib.util

    if target.endswith(".py") or os.path.isfile(target):
        return True
    if ":" in target:
        return False
    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        return False
    return spec is not None and bool(spec.origin) and spec.origin.endswith(".py")


def certify(target: Any, examples: int | None = None, seed: Any = 0, out: str | os.PathLike | None = None, *,
            args: Any = None, records: Any = None, stream: Any = None, key: Any = None, timestamp: Any = None,
            span: int | None = None, layout: str | None = None, late: bool | None = None,
            on_flink: bool = False, flink_faults: int = 6, flink_time_limit: float = 600.0,
            flink_mode: str = "process", command: str = "", database: Any = None,
            on_result: Callable[[dict], None] | None = None,
            progress: Callable[[str, int, bool], None] | None = None):
    """Certifies ``target`` (see the module's docstring) and returns its certificate: a
    :class:`~streamproof.properties.certify.Certificate` for one operator, a
    :class:`~streamproof.properties.certify_job.JobCertificate` for a job. The arguments are the
    options of ``streamproof certify``: ``examples`` (scenarios per property of an operator,
    default 100; random scenarios after a job's plan, default 50, 0 for the plan alone),
    ``seed``, ``out`` (certificate.json, .md, .html and the counterexamples; None writes
    nothing), for an operator ``args`` (a list, a dict or their JSON), ``records`` / ``stream``
    (``"module:name"`` or a Hypothesis strategy), ``key``, ``timestamp`` (``"module:function"``, a
    field index or name, or a function), ``span``, ``layout``, ``late``; for a job ``records``
    (``"SOURCE=module:name"`` or a dict of source name to records) and ``on_flink`` (also run it
    on Apache Flink, ``flink_faults``, ``flink_time_limit``, ``flink_mode``). ``database``: a
    Hypothesis example database whose earlier failures of an operator are replayed first.

    Bad input raises :class:`~streamproof.properties.certify.CertifyError` (an operator) or
    :class:`~streamproof.properties.certify_job_runs.JobCertifyError` (a job), one line each."""
    if is_job(target):
        given = {"args": args, "stream": stream, "key": key, "timestamp": timestamp, "span": span,
                 "layout": layout, "late": late}
        misplaced = [name for name in _OPERATOR_ONLY if given[name] is not None]
        if misplaced:
            raise TypeError(f"{misplaced[0]}= is for one operator; a job brings its own input, keys and timestamps")
        return _certify_job(target, examples, seed, out, records, command,
                            (flink_faults, flink_time_limit, flink_mode) if on_flink else None)
    if on_flink:
        raise TypeError("on_flink=True runs a job on Apache Flink; a single operator has no job to run")
    from streamproof.properties import certify as cert

    if examples is not None and examples < 1:
        raise cert.CertifyError(f"examples={examples}: one operator needs at least one example (0 is for a job: "
                                "its plan only)")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as e:
            raise cert.CertifyError(f"args={args!r}: not JSON: {e}") from None
    if out is not None:
        cert.check_out(out)  # before any work
    subject = cert.load(target, args, records, key, timestamp, span, stream, layout, late)
    return cert.certify(subject, OPERATOR_EXAMPLES if examples is None else examples, seed,
                        None if out is None else Path(out), command=command, on_result=on_result,
                        progress=progress, database=database)


def _certify_job(target: Any, examples: int | None, seed: Any, out, records: Any, command: str,
                 on_flink: tuple | None):
    from streamproof.properties import certify as cert
    from streamproof.properties import certify_job_report as report
    from streamproof.properties.certify_job_runs import JobCertifyError, given_records, load_job, source_records

    if isinstance(target, os.PathLike):
        target = os.fspath(target)
    elif isinstance(target, types.ModuleType):
        target = target.__file__ if target.__name__ == "__main__" else target.__name__
    if out is not None:
        try:
            cert.check_out(out)
        except cert.CertifyError as e:
            raise JobCertifyError(str(e)) from None
    if records is None:
        given = None
    elif isinstance(records, str):
        given = dict([given_records(records)])
    elif isinstance(records, dict):
        given = {name: source_records(value, f"records[{name!r}]") for name, value in records.items()}
    else:
        raise JobCertifyError("records= of a job: 'SOURCE=module:name' or a dict of source name to its records")
    subject = load_job(target, given)
    examples = JOB_EXAMPLES if examples is None else examples
    certificate = report.certify(subject, examples, seed)
    if out is not None:
        report.write(subject, certificate, Path(out), command, examples, seed)
    if on_flink is not None:
        from streamproof.on_flink import oracle
        from streamproof.on_flink import report as flink_report

        if not subject.pipeline.file:
            raise JobCertifyError(f"{subject.target}: on_flink needs the job's file")
        faults, time_limit, mode = on_flink
        certificate.on_flink = oracle.run_on_flink(subject, subject.pipeline.file, faults=faults,
                                                   time_limit=time_limit, mode=mode)
        if out is not None:
            flink_report.append(Path(out), certificate.on_flink, command,
                                [p for p, r in certificate.results.items() if r["verdict"] == "failed"])
    return certificate


def counterexample_files(certificate: Any, out: str | os.PathLike | None) -> dict:
    """property -> (its counterexample file, the command that replays it) of a certificate that
    was written to ``out`` (an operator's or a job's)."""
    import shlex

    found = {}
    if hasattr(certificate, "counterexamples"):  # a job
        target = certificate.target
        for prop in certificate.counterexamples:
            path = None if out is None else str(Path(out) / f"{prop}.json")
            if path is None:
                replay = None
            elif ":" in target:  # a build function: the command line takes the job's file or module
                replay = (f"not replayable from the command line: the job was given as its build function {target} "
                          f"(certify its job file or module to replay {path})")
            else:
                replay = f"streamproof certify {shlex.quote(target)} --replay {shlex.quote(path)}"
            found[prop] = (path, replay)
        return found
    for r in certificate.results:
        if r.get("scenario_file"):
            found[r["property"]] = (r["scenario_file"], r.get("replay"))
    return found
