"""``streamproof examples [DIR]``: writes out the examples the README tour and docs/ use (scenario
files, real operators and jobs, the extending family) from the installed package, so that a user of
the wheel can run them. Registered on the ``streamproof`` group by :mod:`streamproof.cli`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

DEFAULT_DIR = "examples"


def examples_root() -> Path:
    """The examples shipped with this streamproof: ``streamproof/examples`` in a wheel, the
    repository's ``examples/`` in a checkout."""
    here = Path(__file__).resolve().parents[1]  # streamproof/ (this module is in streamproof/cli/)
    for candidate in (here / "examples", here.parent / "examples"):
        if (candidate / "timers").is_dir():
            return candidate
    from streamproof.cli.common import InputError

    raise InputError(f"no examples beside {here}: this installation of streamproof does not ship them")


def example_files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".json", ".py", ".md"))


@click.command()
@click.argument("directory", default=DEFAULT_DIR, metavar="[DIR]")
@click.option("--list", "only_list", is_flag=True, help="list the example files instead of writing them")
@click.option("--json", "as_json", is_flag=True, help="one JSON object: the files written (or listed) and where")
def examples(directory: str, only_list: bool, as_json: bool = False) -> None:
    """Write the examples (scenario files, real operators and jobs, a family package) to DIR
    [default: ./examples], as the README tour and docs/ use them. Existing files are never
    overwritten: DIR must not hold any of them."""
    from streamproof.cli.common import InputError

    root = examples_root()
    names = example_files(root)
    if only_list:
        if as_json:
            click.echo(json.dumps({"files": [str(name) for name in names]}))
            return
        for name in names:
            click.echo(str(name))
        return
    target = Path(directory)
    clashes = [name for name in names if (target / name).exists()]
    if clashes:
        raise InputError(f"{target / clashes[0]} exists ({len(clashes)} of the {len(names)} example files do): "
                         "choose another DIR")
    for name in names:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / name, target / name)
    if as_json:
        click.echo(json.dumps({"directory": str(target), "files": [str(name) for name in names]}))
        return
    click.echo(f"wrote {len(names)} example files to {target}/; try: streamproof replay {target}/timers/*.json")
