"""Ships the project's code to the executors: one zip of the ``streamproof`` package as it is
installed (from a checkout: ``streamproof/`` with ``model``, ``impl``, ``properties`` and
``spark_harness`` mapped under it, as the wheel's package-dir mapping does; from an installed
wheel: the installed package tree), named by a hash of its content, added with ``spark.addArtifacts(zip,
pyfile=True)`` (classic, local Connect and ``sc://`` alike). Spark refuses a changed file under a
name it already has, so a new content gets a new name; the zip is byte-for-byte reproducible
(fixed timestamps and order), so the same code always gives the same name.

Native dependencies are not in the zip: see docs/spark.md (the executors' Python must have the
project's requirements; z3 is only needed by ``prove``, never by a campaign).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

# repository folder -> its place in the zip (the installed import path)
PACKAGES = {"streamproof": "streamproof", "model": "streamproof/model", "impl": "streamproof/impl",
            "properties": "streamproof/properties", "spark_harness": "streamproof/spark_harness"}
_EPOCH = (1980, 1, 1, 0, 0, 0)


def project_root() -> Path:
    return Path(__file__).resolve().parents[1]


def _layout(root: Path) -> dict[str, str]:
    """Folder under ``root`` -> its place in the zip: a checkout (``root`` holds ``streamproof/`` and
    the mapped folders) maps them as the wheel's package-dir does; an installed package (``root`` is
    ``site-packages/streamproof`` itself, from a wheel) is shipped as it is."""
    if (root / "streamproof").is_dir():
        return PACKAGES
    return {".": "streamproof"}


def _files(root: Path) -> list[tuple[str, Path]]:
    out = []
    for package, target in _layout(root).items():
        base = root / package
        if not base.is_dir():
            raise FileNotFoundError(f"cannot ship the code: package directory {base} not found")
        for path in base.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                out.append((f"{target}/{path.relative_to(base).as_posix()}", path))
    return sorted(out)


def content_hash(root: Path | None = None) -> str:
    digest = hashlib.sha256()
    for name, path in _files(root or project_root()):
        data = path.read_bytes()
        digest.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def build_zip(root: Path | None = None, directory: str | os.PathLike | None = None) -> Path:
    """The code zip (built once per content; reused when it exists)."""
    root = root or project_root()
    directory = Path(directory or Path(tempfile.gettempdir()) / f"streamproof-artifacts-{os.getuid()}")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"streamproof-code-{content_hash(root)[:16]}.zip"
    if target.exists():
        return target
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, path in _files(root):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
    os.replace(partial, target)
    return target


_shipped: dict[int, set[str]] = {}


def ship(spark, zip_path: Path | None = None) -> Path:
    """Adds the code zip to ``spark``'s session (once per session)."""
    zip_path = zip_path or build_zip()
    done = _shipped.setdefault(id(spark), set())
    if zip_path.name not in done:
        spark.addArtifacts(str(zip_path), pyfile=True)
        done.add(zip_path.name)
    return zip_path
