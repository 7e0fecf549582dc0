"""The optional extras, and the one line a command gives when one it needs is not installed.

``require(("z3",), "prove", "streamproof prove")`` raises :class:`InputError` (exit 2) saying
``streamproof prove needs the z3 extra: z3 is not installed ...; install it with: pip install
'streamproof[prove]'`` instead of a ModuleNotFoundError traceback.
"""

from __future__ import annotations

import importlib

from streamproof.cli.common import InputError

NAMES = {"spark": "Spark", "prove": "z3", "pyflink": "PyFlink", "flink": "Apache Flink"}


def install_line(extra: str) -> str:
    return f"pip install 'streamproof[{extra}]'"


def missing(e: ImportError, extra: str, command: str) -> str:
    """The one line for a module of ``extra`` that does not import."""
    name = getattr(e, "name", None) or str(e)
    return (f"{command} needs the {NAMES[extra]} extra: {name} is not installed (or does not import: "
            f"{' '.join(str(e).split())[:200]}); install it with: {install_line(extra)}")


def require(modules: tuple[str, ...], extra: str, command: str) -> None:
    """Imports ``modules``; the first that fails is one line naming ``extra`` (exit 2)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise InputError(missing(e, extra, command)) from None
