"""Apache Flink's jars and the Java harness built against them.

``flink_home(version)`` is a directory whose ``lib/`` holds a Flink release's jars, taken from the
PyPI package ``apache-flink-libraries==<version>`` (its ``pyflink/lib/*.jar``: ``flink-dist``,
the table jars, log4j). It lives under the cache root ``$STREAMPROOF_FLINK_CACHE`` (default
``~/.cache/streamproof``) as ``flink-<version>/``; when ``lib/flink-dist-<version>.jar`` is missing
it is downloaded once with the current Python's pip (``sys.executable -m pip download
apache-flink-libraries==<version> --no-deps``) and the jars extracted.

``harness_classpath(version)`` compiles the harness sources (``java/org/streamproof/harness/*.java``
beside this module) with ``javac`` against those jars into ``flink-<version>/classes-<hash>``, the
hash covering the sources, so an edit recompiles and an unchanged harness compiles once; it
returns the classpath for ``java -cp``.

Any 2.x version string is accepted (the harness drives 2.x APIs: FLIP-443 interruptible timers,
``MailboxExecutor.MailOptions.urgent``). Tried: 2.3.0 (all vectors in ``shared/vectors`` were
recorded with it). When pip, java or javac is missing, or the version does not exist on PyPI, one
:class:`FlinkUnavailable` with a one-line message says so; a harness that does not compile raises
:class:`HarnessBuildError` with javac's first errors.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

__all__ = [
    "FlinkUnavailable", "HarnessBuildError", "cache_root", "flink_home", "harness_classpath",
    "java_sources", "require_java",
]

JAVA_DIR = Path(__file__).resolve().parent / "java"
PACKAGE = "apache-flink-libraries"
SUPPORTED = ("2.1.0", "2.2.0", "2.3.0")  # each: conform with 300 scenarios per family, 0 divergences
_VERSION = re.compile(r"^2\.\d+(\.\d+)?([.-]?(rc|a|b|dev|post)\d*)?$")


class FlinkUnavailable(RuntimeError):
    """Flink's jars or a JDK cannot be had here (the message is one line saying why)."""


class HarnessBuildError(RuntimeError):
    """The Java harness does not compile against this Flink version."""


def cache_root() -> Path:
    """``$STREAMPROOF_FLINK_CACHE``, else ``~/.cache/streamproof``."""
    env = os.environ.get("STREAMPROOF_FLINK_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "streamproof"


def _check_version(version: str) -> str:
    if not isinstance(version, str) or not _VERSION.match(version):
        raise FlinkUnavailable(f"Flink version {version!r} is not supported: the harness drives Flink 2.x "
                               f"(e.g. '2.3.0')")
    return version


def require_java() -> tuple[str, str]:
    """The paths of ``java`` and ``javac``, or :class:`FlinkUnavailable`."""
    java, javac = shutil.which("java"), shutil.which("javac")
    missing = [name for name, path in (("java", java), ("javac", javac)) if path is None]
    if missing:
        raise FlinkUnavailable(f"{' and '.join(missing)} not found on PATH: the Flink harness needs a JDK 17+")
    return java, javac


def flink_home(version: str = "2.3.0") -> Path:
    """The directory whose ``lib/`` holds Flink ``version``'s jars, downloading them if needed."""
    _check_version(version)
    home = cache_root() / f"flink-{version}"
    lib = home / "lib"
    if (lib / f"flink-dist-{version}.jar").is_file():
        return home
    created = not home.exists()
    home.mkdir(parents=True, exist_ok=True)
    try:
        _download(version, home, lib)
    except BaseException:
        if created:
            shutil.rmtree(home, ignore_errors=True)  # leave no empty flink-<version>/ behind
        raise
    return home


def _download(version: str, home: Path, lib: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="streamproof-flink-", dir=home) as tmp:
        download = Path(tmp) / "download"
        cmd = [sys.executable, "-m", "pip", "download", f"{PACKAGE}=={version}", "--no-deps",
               "--disable-pip-version-check", "-d", str(download)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise FlinkUnavailable(f"cannot run pip to download {PACKAGE}=={version}: {e}") from None
        if proc.returncode != 0:
            text = proc.stderr + proc.stdout
            if "No module named pip" in text:
                raise FlinkUnavailable(f"pip is not installed for {sys.executable}: cannot download "
                                       f"{PACKAGE}=={version}")
            if "No matching distribution" in text or "Could not find a version" in text:
                raise FlinkUnavailable(f"Flink {version} does not exist on PyPI ({PACKAGE}=={version} not found)")
            last = next((l.strip() for l in reversed(text.splitlines()) if l.strip()), "no output")
            raise FlinkUnavailable(f"pip download {PACKAGE}=={version} failed: {last}")
        archives = sorted(download.iterdir())
        if not archives:
            raise FlinkUnavailable(f"pip download {PACKAGE}=={version} gave no file")
        staging = Path(tmp) / "lib"
        staging.mkdir()
        count = _extract_jars(archives[0], staging)
        if not (staging / f"flink-dist-{version}.jar").is_file():
            raise FlinkUnavailable(f"{archives[0].name} holds no pyflink/lib/flink-dist-{version}.jar "
                                   f"({count} jars found)")
        if lib.exists():  # a partial or foreign lib/: replace it
            shutil.rmtree(lib, ignore_errors=True)
        try:
            staging.rename(lib)
        except OSError:
            if not (lib / f"flink-dist-{version}.jar").is_file():  # not a concurrent winner
                raise


def _extract_jars(archive: Path, dest: Path) -> int:
    """Copies every ``pyflink/lib/*.jar`` of a wheel (an sdist keeps them in ``deps/lib/``) into
    ``dest``; returns how many."""
    def wanted(name: str) -> str | None:
        parts = name.replace("\\", "/").split("/")
        if len(parts) >= 3 and parts[-3:-1] in (["pyflink", "lib"], ["deps", "lib"]) and parts[-1].endswith(".jar"):
            return parts[-1]
        return None

    count = 0
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                base = wanted(info.filename)
                if base:
                    with z.open(info) as src, open(dest / base, "wb") as out:
                        shutil.copyfileobj(src, out)
                    count += 1
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
            for member in t:
                base = wanted(member.name) if member.isfile() else None
                if base:
                    src = t.extractfile(member)
                    with src, open(dest / base, "wb") as out:
                        shutil.copyfileobj(src, out)
                    count += 1
    else:
        raise FlinkUnavailable(f"{archive.name} is neither a wheel nor an sdist")
    return count


def java_sources() -> list[Path]:
    """The harness's Java sources, in a stable order."""
    return sorted(JAVA_DIR.rglob("*.java"))


def _sources_hash(sources: list[Path]) -> str:
    h = hashlib.sha256()
    for path in sources:
        h.update(path.relative_to(JAVA_DIR).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def harness_classpath(version: str = "2.3.0") -> str:
    """The ``java -cp`` classpath of the harness for Flink ``version``, compiling it if needed."""
    _, javac = require_java()
    home = flink_home(version)
    lib = home / "lib"
    sources = java_sources()
    if not sources:
        raise HarnessBuildError(f"no Java sources under {JAVA_DIR}")
    classes = home / f"classes-{_sources_hash(sources)}"
    if not (classes / "org" / "streamproof" / "harness" / "Main.class").is_file():
        shutil.rmtree(classes, ignore_errors=True)  # a partial leftover
        tmp = Path(tempfile.mkdtemp(prefix="classes-tmp-", dir=home))
        try:
            cmd = [javac, "-nowarn", "-encoding", "UTF-8", "-cp", str(lib / "*"), "-d", str(tmp),
                   *map(str, sources)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                errors = [l.strip() for l in (proc.stderr + proc.stdout).splitlines() if ": error:" in l]
                first = errors[0].split("/harness/")[-1] if errors else "javac failed"
                raise HarnessBuildError(f"the harness does not compile against Flink {version} (supported: "
                                        f"{', '.join(SUPPORTED)}): {first}")
            try:
                tmp.rename(classes)
            except OSError:  # compiled concurrently by another process: keep theirs
                if not classes.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return os.pathsep.join([str(classes), str(lib / "*")])
